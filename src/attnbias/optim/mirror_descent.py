"""ℓp mirror descent (MD paper's ℓp-AttGD, p-GD of seed 003).

Potential ψ(w) = (1/p)‖w‖_p^p, mirror map ∇ψ(w) = sign(w)|w|^{p−1}, applied entrywise:

    ∇ψ(w⁺) = ∇ψ(w) − η g,     w⁺ = sign(θ)|θ|^{1/(p−1)},  θ the right-hand side.

With normalize, g is the gradient divided by its dual ℓq norm, q = p/(p−1).
p = 2 is exactly SGD (plain) or normalized GD (normalized). For p near 1, entries that start
at 0 (e.g. biases) move very slowly at first: w = |θ|^{1/(p−1)} is 1e-30 for θ = 1e-3, p = 1.1.
"""

from __future__ import annotations

import torch
from torch.optim import Optimizer

from .._validate import check_p
from ._common import (
    add_scaled_,
    check_lr,
    check_normalize,
    dual_exponent,
    evaluate,
    groups_with_grad,
    inverse_norm_scales,
)


def mirror_map(w: torch.Tensor, p: float) -> torch.Tensor:
    """∇ψ(w) = sign(w)|w|^{p−1}."""
    return torch.sign(w) * torch.abs(w) ** (p - 1.0)


def inverse_mirror_map(theta: torch.Tensor, p: float) -> torch.Tensor:
    """(∇ψ)⁻¹(θ) = sign(θ)|θ|^{1/(p−1)}."""
    return torch.sign(theta) * torch.abs(theta) ** (1.0 / (p - 1.0))


def _dual_points(params: list[torch.Tensor], p: float) -> list[torch.Tensor]:
    """∇ψ(w) for each tensor, with foreach kernels."""
    theta = torch._foreach_abs(params)
    torch._foreach_pow_(theta, p - 1.0)
    torch._foreach_mul_(theta, torch._foreach_sign(params))
    return theta


def _set_primal_(params: list[torch.Tensor], duals: list[torch.Tensor], p: float) -> None:
    """In place: w ← (∇ψ)⁻¹(θ) = sign(θ)|θ|^{1/(p−1)}, written straight into the parameters."""
    torch._foreach_copy_(params, duals)
    torch._foreach_abs_(params)
    if p < 2.0:  # exponent 1/(p−1) − 1 > 0: θ·|θ|^{(2−p)/(p−1)} needs no sign pass
        torch._foreach_pow_(params, (2.0 - p) / (p - 1.0))
        torch._foreach_mul_(params, duals)
    else:
        torch._foreach_pow_(params, 1.0 / (p - 1.0))
        torch._foreach_mul_(params, torch._foreach_sign(duals))


def mirror_descent_(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    lr: float,
    p: float,
    scales: list[float] | None = None,
    duals: list[torch.Tensor] | None = None,
) -> None:
    """In place: one ℓp mirror step on each tensor, with g scaled by `scales` if given.

    `duals`, if given, are the current ∇ψ(w) (updated in place); otherwise they are computed."""
    if p == 2.0:
        add_scaled_(params, grads, lr, scales)
        return
    if duals is None:
        duals = _dual_points(params, p)
    add_scaled_(duals, grads, lr, scales)
    _set_primal_(params, duals, p)


class MirrorDescent(Optimizer):
    """ℓp mirror descent.

    Args:
        params: parameters or parameter groups.
        lr: step size η > 0.
        p: exponent of the potential, p > 1 (p = 2 is gradient descent).
        normalize: False (plain MD), True / "per_tensor" (each tensor's gradient divided by its
            own dual ℓq norm) or "global" (by the dual norm of the group's gradients together).
    """

    def __init__(self, params, lr: float, p: float = 2.0, normalize: bool | str = False):
        lr = check_lr(lr)
        p = check_p(p, "p", minimum=1.0, strict=True)
        defaults = dict(lr=lr, p=p, normalize=check_normalize(normalize))
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = evaluate(closure)
        for group, params, grads in groups_with_grad(self):
            p, mode = group["p"], group["normalize"]
            scales = None if mode is None else inverse_norm_scales(grads, mode, dual_exponent(p))
            duals = None if p == 2.0 else self._duals(params, p)
            mirror_descent_(params, grads, group["lr"], p, scales, duals)
            for w in params:
                self.state[w]["version"] = w._version
        return loss

    def _duals(self, params: list[torch.Tensor], p: float) -> list[torch.Tensor]:
        """The dual iterates θ = ∇ψ(w), kept in `state` so a step costs one map, not two.

        A parameter changed in place since our last step (its version counter moved) gets its
        θ recomputed; after `load_state_dict` the stored θ is trusted, like a momentum buffer."""
        stale = [
            w
            for w in params
            if "dual" not in self.state[w] or self.state[w].get("version") not in (None, w._version)
        ]
        if stale:
            for w, theta in zip(stale, _dual_points(stale, p)):
                self.state[w]["dual"] = theta
        return [self.state[w]["dual"] for w in params]

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        for state in self.state.values():
            state["version"] = None
