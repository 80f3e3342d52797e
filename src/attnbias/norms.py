"""Entrywise ℓp norms and the ℓp mirror map, computed so that no scale of input underflows or
overflows (docs/theory.md#algorithms and #numerics).

Every function reduces over `dim` (a tuple of trailing dimensions, all of them when None) and
keeps the leading ones as a batch; an exponent p may be a float or a tensor that broadcasts
against the batch (one p per run). These are the only implementations in the package: the
optimisers, the batched engine and the metrics all call them.
"""

from __future__ import annotations

import math

import torch

Exponent = float | torch.Tensor


def dual_exponent(p: Exponent) -> Exponent:
    """q with 1/p + 1/q = 1 (q = ∞ for p = 1, q = 1 for p = ∞)."""
    if isinstance(p, torch.Tensor):
        return p / (p - 1.0)
    if p == 1.0:
        return math.inf
    return 1.0 if math.isinf(p) else p / (p - 1.0)


def power_(x: torch.Tensor, e: Exponent) -> torch.Tensor:
    """In place: x ← x^e for x ≥ 0 and e > 0, with exact fast paths for the exponents that
    p = 2 and 3 need (1, 2, 1/2) and exp(e·log x) for a tensor of exponents (0 stays 0)."""
    if isinstance(e, torch.Tensor):
        return x.log_().mul_(e).exp_()
    if e == 1.0:
        return x
    if e == 2.0:
        return x.mul_(x)
    if e == 0.5:
        return x.sqrt_()
    return x.pow_(e)


def per_run(e: Exponent, like: torch.Tensor) -> Exponent:
    """A tensor of per-run values (R,) shaped (R, 1, …) to broadcast against `like` (R, …);
    floats and 0-d tensors are returned as they are."""
    if not isinstance(e, torch.Tensor) or e.dim() == 0:
        return e
    return e.reshape(*e.shape, *([1] * (like.dim() - e.dim())))


def _dims(x: torch.Tensor, dim) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(x.dim()))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def lp_norm(x: torch.Tensor, p: Exponent = 2.0, dim=None, *, scratch=None) -> torch.Tensor:
    """‖x‖_p = (Σ |x_k|^p)^{1/p} over `dim`, for p ≥ 1 or p = ∞.

    Computed as m·‖x/m‖_p with m the largest |x_k|, so tiny late-training gradients (whose
    p-th powers underflow) and huge ones (whose powers overflow) get their true norm. NaN in,
    NaN out; an infinite entry gives ∞. `scratch`, a tensor shaped like x, avoids allocating
    the temporary (the optimisers pass one for large parameters)."""
    dims = _dims(x, dim)
    a = torch.abs(x, out=scratch) if scratch is not None else x.abs()
    top = a.amax(dims, keepdim=True) if a.numel() else a.new_zeros([1] * a.dim())
    if not isinstance(p, torch.Tensor) and math.isinf(p):
        return top.squeeze(dims) if dims else top
    a.div_(torch.where(top > 0, top, 1.0))
    q = per_run(p, top)
    total = power_(a, q).sum(dims, keepdim=True)
    norm = power_(total, 1.0 / q) * top
    norm = torch.where(torch.isinf(top), top, norm)
    return norm.squeeze(dims) if dims else norm


def mirror_map(w: torch.Tensor, p: Exponent, *, out=None) -> torch.Tensor:
    """∇ψ(w) = sign(w)|w|^{p−1} for ψ(w) = (1/p)‖w‖_p^p, entrywise (a tensor p holds one
    exponent per leading index)."""
    return _signed_power(w, per_run(p, w), lambda p: p - 1.0, out)


def inverse_mirror_map(theta: torch.Tensor, p: Exponent, *, out=None) -> torch.Tensor:
    """(∇ψ)⁻¹(θ) = sign(θ)|θ|^{1/(p−1)}."""
    return _signed_power(theta, per_run(p, theta), lambda p: 1.0 / (p - 1.0), out)


def _signed_power(x, p, exponent, out):
    """sign(x)|x|^e with e = exponent(p): three passes and no temporary when `out` is given."""
    if not isinstance(p, torch.Tensor) and p == 2.0:
        return x.clone() if out is None else out.copy_(x)
    y = torch.abs(x, out=out) if out is not None else x.abs()
    return power_(y, exponent(p)).copysign_(x)
