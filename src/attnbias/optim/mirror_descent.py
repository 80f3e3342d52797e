"""ℓp mirror descent (MD paper's ℓp-AttGD, p-GD of seed 003).

Potential ψ(w) = (1/p)‖w‖_p^p, mirror map ∇ψ(w) = sign(w)|w|^{p−1}, applied entrywise:

    ∇ψ(w⁺) = ∇ψ(w) − η g,     w⁺ = sign(θ)|θ|^{1/(p−1)},  θ the right-hand side.

With normalize, g is the gradient divided by its dual ℓq norm, q = p/(p−1).
p = 2 is exactly SGD (plain) or normalized GD (normalized).
"""

from __future__ import annotations

import torch
from torch.optim import Optimizer

from .._validate import check_p
from ._common import (
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


def mirror_descent_(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    lr: float,
    p: float,
    scales: list[float] | None = None,
) -> None:
    """In place: one ℓp mirror step on each tensor, with g scaled by `scales` if given."""
    if scales is not None:
        grads = torch._foreach_mul(grads, scales)
    if p == 2.0:
        torch._foreach_add_(params, grads, alpha=-lr)
        return
    theta = torch._foreach_abs(params)
    torch._foreach_pow_(theta, p - 1.0)
    torch._foreach_mul_(theta, torch._foreach_sign(params))
    torch._foreach_add_(theta, grads, alpha=-lr)
    new = torch._foreach_abs(theta)
    torch._foreach_pow_(new, 1.0 / (p - 1.0))
    torch._foreach_mul_(new, torch._foreach_sign(theta))
    torch._foreach_copy_(params, new)


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
            mirror_descent_(params, grads, group["lr"], p, scales)
        return loss
