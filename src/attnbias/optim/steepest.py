"""Normalized steepest descent in a norm ‖·‖ (docs/theory.md#atlas): the update rules of
`SignGD`, `SpectralDescent` and `SteepestDescent`, shared with the batched engine.

    m ← β m + g                    momentum on the raw gradient (β = 0: m = g)
    Δ = argmax_{‖U‖ ≤ 1} ⟨m, U⟩    the steepest direction (so ⟨m, Δ⟩ = ‖m‖_*)
    W ← W − η Δ

That is momentum on the gradient, Muon's order. Two variants (`steepest_step_`): Nesterov's,
as torch.optim.SGD(nesterov=True) takes it (the direction of g + β m instead of m), and
momentum on the direction, NGD-mom's order (u = Δ(g), m ← β m + u, W ← W − η m; Nesterov:
W ← W − η (u + β m)), whose step is not normalised: its size grows towards η/(1 − β).

entrywise ℓp, 1 < p < ∞, q = p/(p−1):  Δ = sign(m)|m|^{q−1} / ‖m‖_q^{q−1}   (p = 2: m/‖m‖₂)
entrywise ℓ∞:                          Δ = sign(m)                          (sign descent)
spectral (operator 2-norm):            Δ = U Vᵀ from the thin SVD m = U Σ Vᵀ, over the
                                       nonzero singular values only (or Newton–Schulz)

As in `functional`, every tensor has a leading run axis (R, …) and hyper-parameters are floats
or (R,) tensors. Directions are scale-free, so each is computed from m / max|m|: a gradient
anywhere in the float range gives its true direction, and a zero one gives Δ = 0 (no step).
"""

from __future__ import annotations

import math

import torch

from ..norms import lp_norm, per_run
from .functional import Number, run_dims

KINDS = ("lp", "spectral")  # codes of the engine's per-run `kind`
METHODS = ("svd", "newton-schulz")
MOMENTUM_ON = ("gradient", "direction")  # what momentum accumulates (module text)
# Cubic Newton–Schulz steps: singular values σ ≳ 1.5^-NS_STEPS·‖m‖_F (~3e-4) reach 1; more
# would also raise the rounding noise of a rank-deficient m (σ ~ 1e-16‖m‖) by 1.5 per step.
NS_STEPS = 20


def max_scaled(m: torch.Tensor) -> torch.Tensor:
    """m / max|m| per run (0 stays 0): entries in [-1, 1] with a largest of magnitude 1."""
    top = m.abs().amax(run_dims(m), keepdim=True)
    return m / torch.where(top > 0, top, 1.0)


def lp_direction(m: torch.Tensor, p: Number) -> torch.Tensor:
    """The ℓp steepest direction of each run, p in (1, ∞] (a float or an (R,) tensor).

    With a = |m|/max|m| and q − 1 = 1/(p − 1): Δ = sign(m) a^{q−1} / (Σ a^q)^{1/p}, since
    ‖a‖_q^{q−1} = (Σ a^q)^{(q−1)/q} and (q−1)/q = 1/p; Σ a^q ≥ 1 (the largest a is 1), so
    nothing under- or overflows. p = 2 divides by ‖m‖₂ exactly as `NormalizedGD` does."""
    if not isinstance(p, torch.Tensor):
        if p == 2.0:
            norm = lp_norm(m, 2.0, run_dims(m))
            return m / per_run(torch.where(norm > 0, norm, math.inf), m)
        if math.isinf(p):
            return torch.sign(m)
    a = max_scaled(m).abs()
    p = per_run(p, a) if isinstance(p, torch.Tensor) else torch.tensor(p, dtype=a.dtype)
    e = torch.where(torch.isinf(p), 0.0, 1.0 / (p - 1.0))  # q − 1 (0 for p = ∞)
    total = torch.pow(a, e + 1.0).sum(run_dims(a), keepdim=True)
    total = torch.where(total > 0, total, 1.0)  # m = 0: Δ = 0
    return torch.sign(m) * torch.pow(a, e) / torch.pow(total, 1.0 / p)


def spectral_direction(
    m: torch.Tensor, method: str = "svd", ns_steps: int = NS_STEPS
) -> torch.Tensor:
    """U Vᵀ of each run's matrix m (R, a, b): the spectral-norm steepest direction.

    "svd": the thin SVD, keeping singular values above max(a, b)·eps·σ_max (those below are
    rounding noise of a rank-deficient m, whose singular vectors are arbitrary).
    "newton-schulz": X₀ = m/‖m‖_F, X ← 1.5 X − 0.5 X XᵀX, `ns_steps` times: the odd polynomial
    drives every singular value in (0, 1] towards 1 and keeps 0 at 0, with no SVD."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if m.dim() != 3:
        raise ValueError(f"the spectral direction needs matrices (R, a, b), got {tuple(m.shape)}")
    x = max_scaled(m)
    if method == "svd":
        U, S, Vh = torch.linalg.svd(x, full_matrices=False)
        keep = S > S[..., :1] * (max(x.shape[-2:]) * torch.finfo(x.dtype).eps)
        return (U * keep.unsqueeze(-2).to(x.dtype)) @ Vh
    norm = lp_norm(x, 2.0, (1, 2))
    x = x / torch.where(norm > 0, norm, 1.0).reshape(-1, 1, 1)
    for _ in range(ns_steps):
        x = 1.5 * x - 0.5 * (x @ x.mT @ x)
    return x


def directions(
    m: torch.Tensor,
    kind: str | torch.Tensor,
    p: Number = 2.0,
    method: str = "svd",
) -> torch.Tensor:
    """The steepest direction of each run: kind "lp" (exponent p) or "spectral", or an (R,)
    tensor of indices into KINDS (the engine mixes them in one batch)."""
    if isinstance(kind, str):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        return lp_direction(m, p) if kind == "lp" else spectral_direction(m, method)
    codes = set(kind.tolist())
    if codes == {0} or codes == {1}:
        return directions(m, KINDS[codes.pop()], p, method)
    spectral = per_run(kind == 1, m)
    return torch.where(spectral, spectral_direction(m, method), lp_direction(m, p))


def steepest_step_(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    lr: Number,
    *,
    kind: str | torch.Tensor = "lp",
    p: Number = 2.0,
    method: str = "svd",
    momentum: Number = 0.0,
    buffers: list[torch.Tensor] | None = None,
    nesterov: bool = False,
    momentum_on: str = "gradient",
) -> None:
    """In place: m ← β m + g, W ← W − η Δ(m) for each tensor (see the module text), or with
    `nesterov` W ← W − η Δ(g + β m); `momentum_on="direction"`: m ← β m + Δ(g) and
    W ← W − η m (Nesterov: W ← W − η (Δ(g) + β m)).

    buffers: the momentum buffers m (needed when momentum is not 0)."""
    if momentum_on not in MOMENTUM_ON:
        raise ValueError(f"momentum_on must be one of {MOMENTUM_ON}, got {momentum_on!r}")
    uses_momentum = isinstance(momentum, torch.Tensor) or momentum != 0.0
    if uses_momentum and buffers is None:
        raise ValueError("momentum needs the momentum `buffers`")
    for k, (w, g) in enumerate(zip(params, grads)):
        if not uses_momentum:
            delta = directions(g, kind, p, method)
        elif momentum_on == "gradient":
            beta = per_run(momentum, g)
            m = buffers[k].mul_(beta).add_(g)
            delta = directions(g + beta * m if nesterov else m, kind, p, method)
        else:
            u = directions(g, kind, p, method)
            beta = per_run(momentum, u)
            m = buffers[k].mul_(beta).add_(u)
            delta = u + beta * m if nesterov else m
        if isinstance(lr, torch.Tensor):
            w.sub_(delta * per_run(lr, delta))
        else:  # as `functional.step_` writes it, so that p = 2 is NGD to the last bit
            w.add_(delta, alpha=-lr)
