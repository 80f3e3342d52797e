"""Normalized steepest descent as `torch.optim` optimisers (docs/theory.md#atlas; Fan, Schmidt,
Thrampoulidis, arXiv 2502.04664): each converges, on linearly separable problems, in direction
to the max-margin solution of its own norm.

    SteepestDescent(norm=p)   entrywise ℓp, 1 < p ≤ ∞ (p = 2: NormalizedGD per tensor)
    SignGD                    entrywise ℓ∞: W ← W − η sign(m)
    SpectralDescent           operator 2-norm: W ← W − η U Vᵀ (matrices only)

with momentum m ← β m + g on the raw gradient (the update rules are `optim.steepest`). Each
tensor is its own steepest-descent problem (the norm of a group of tensors is not defined).
"""

from __future__ import annotations

import math

import torch
from torch.optim import Optimizer

from .._validate import check_scalar
from . import steepest
from ._common import as_runs, check_finite, check_lr, evaluate, groups_with_grad


class _Steepest(Optimizer):
    """The step shared by the three classes; a group's "kind", "p" and "method" choose Δ."""

    def __init__(self, params, lr, momentum, **rule):
        lr = check_lr(lr)
        momentum = check_scalar(momentum, "momentum", low=0.0, high=1.0, include_high=False)
        super().__init__(params, dict(lr=lr, momentum=momentum, **rule))

    @torch.no_grad()
    def step(self, closure=None):
        loss = evaluate(closure)
        name = type(self).__name__
        for index, group, params, grads in groups_with_grad(self):
            tops = [g.abs().amax() if g.numel() else g.new_zeros(()) for g in grads]
            check_finite(name, tops, (index, params, grads))
            beta, buffers = group["momentum"], None
            if beta != 0.0:
                buffers = as_runs(
                    [
                        self.state[w].setdefault("momentum_buffer", torch.zeros_like(w))
                        for w in params
                    ]
                )
            steepest.steepest_step_(
                as_runs(params),
                as_runs(grads),
                group["lr"],
                kind=group["kind"],
                p=group["p"],
                method=group["method"],
                momentum=beta,
                buffers=buffers,
            )
        return loss


class SteepestDescent(_Steepest):
    """Normalized steepest descent for the entrywise ℓp norm:
    W ← W − η sign(m)|m|^{q−1}/‖m‖_q^{q−1}, q = p/(p−1).

    Args:
        params: parameters or parameter groups.
        lr: step size η > 0 (a float or a one-element tensor).
        norm: p in (1, ∞] (float("inf") is SignGD, 2 is per-tensor NormalizedGD).
        momentum: β in [0, 1), on the raw gradient.

    A NaN or infinite gradient raises FloatingPointError naming the parameter.
    """

    def __init__(self, params, lr, norm: float = 2.0, momentum: float = 0.0):
        norm = check_scalar(norm, "norm", low=1.0, include_low=False, allow_inf=True)
        super().__init__(params, lr, momentum, kind="lp", p=float(norm), method="svd")


class SignGD(_Steepest):
    """Sign descent, normalized steepest descent for the entrywise ℓ∞ norm: W ← W − η sign(m).

    Args: params, lr (η > 0), momentum (β in [0, 1), on the raw gradient)."""

    def __init__(self, params, lr, momentum: float = 0.0):
        super().__init__(params, lr, momentum, kind="lp", p=math.inf, method="svd")


class SpectralDescent(_Steepest):
    """Spectral descent, normalized steepest descent for the operator 2-norm:
    W ← W − η U Vᵀ with m = U Σ Vᵀ (thin SVD, nonzero singular values).

    Args:
        params: 2-d parameters (matrices) or groups of them.
        lr: step size η > 0; momentum: β in [0, 1), on the raw gradient.
        method: "svd" (exact) or "newton-schulz" (cubic Newton–Schulz iterations on m/‖m‖_F,
            `optim.steepest.NS_STEPS` of them, as Muon orthogonalises without an SVD).
    """

    def __init__(self, params, lr, momentum: float = 0.0, method: str = "svd"):
        if method not in steepest.METHODS:
            raise ValueError(f"method must be one of {steepest.METHODS}, got {method!r}")
        super().__init__(params, lr, momentum, kind="spectral", p=2.0, method=method)
        for index, group in enumerate(self.param_groups):
            for k, w in enumerate(group["params"]):
                if w.dim() != 2:
                    raise ValueError(
                        f"SpectralDescent: parameter {k} of group {index} has shape "
                        f"{tuple(w.shape)}; the spectral norm needs matrices (2-d parameters), "
                        "optimise the others with another optimiser"
                    )
