"""The update rules of every attnbias optimiser, written once (docs/theory.md#algorithms).

The `torch.optim` classes of this package and the batched engine both call these functions.
Every tensor carries a leading run axis: the engine advances R runs at once, the classes pass
each parameter as a view with R = 1. Hyper-parameters are floats (shared by all runs) or (R,)
tensors (one per run). One step is three transformations, applied to each parameter tensor:

    u = g / D          the divisor D of the step rule (`divisors`: 1, a norm of g, the
                       loss, or Polyak's 1/η_t)
    m ← β m + u        momentum (β = 0: m = u)
    θ ← θ − η m        θ = ∇ψ(w) = sign(w)|w|^{p−1}, the dual iterate of ℓp mirror descent
    w = (∇ψ)⁻¹(θ)      (p = 2: θ = w, and this is gradient descent)

Norms are scale-safe (`attnbias.norms`), so a gradient anywhere in the float range gives its
true direction: a normalised method keeps moving as long as its gradient is not exactly zero.
D = 0 (a zero gradient, or L = 0) means no step; a NaN or infinite gradient propagates into
the parameters (the classes check for it first and raise, naming the parameter).

The mirror step is scale-safe too. For p < 2, θ = |w|^{p−1} cannot leave the float range and
w⁺ leaves it only where the exact w⁺ does (it is ±inf there). For p > 2 (or a per-run p), θ
overflows or underflows for unremarkable weights (|w| > 1.43 at p = 2000), so each tensor's
θ⁺ is checked (one host sync) and the entries out of range are redone in the log domain
(`norms.log_domain_step`); w⁺ is ±inf only where the exact w⁺ does not fit.
"""

from __future__ import annotations

import math

import torch

from ..norms import (
    inverse_mirror_map,
    inverse_mirror_map_foreach_,
    log_domain_step,
    per_run,
    power_,
)
from . import fused_mirror

Number = float | torch.Tensor


def run_dims(t: torch.Tensor) -> tuple[int, ...]:
    """Every dimension but the run axis."""
    return tuple(range(1, t.dim()))


def step_(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    divisors: list[torch.Tensor] | None,
    lr: Number,
    *,
    p: Number = 2.0,
    duals: list[torch.Tensor] | None = None,
    momentum: Number = 0.0,
    buffers: list[torch.Tensor] | None = None,
    scratch: list[torch.Tensor] | None = None,
    copies: list[torch.Tensor | None] | None = None,
    range_ok: torch.Tensor | None = None,
    foreach: bool = False,
    pieces: list[list[torch.Tensor]] | None = None,
) -> None:
    """In place: one step θ ← θ − η·m, w = (∇ψ)⁻¹(θ) of each tensor (see the module text).

    duals: the dual iterates θ = ∇ψ(w), kept across steps by the caller (needed unless
    p = 2). buffers: momentum buffers m (needed when momentum is not 0). scratch: a buffer
    shaped like each parameter (with its run axis) for g/D and the inverse mirror map's
    powers, or None (then they are allocated). copies: where an entry is a tensor, the new w
    is copied into it right after its step, while w is still in cache (the classes keep such
    a copy of what a step wrote).
    range_ok: for p > 2, check θ⁺'s range without looking at the host: a one-element bool
    tensor, set to False (and never back) when an entry needed the log-domain redo, which is
    then skipped. A step that leaves it True is the checked step bit for bit; after one that
    clears it, the caller redoes the steps from a saved state with range_ok=None (the engine
    does so at its recording points: no host synchronisation between them).
    foreach: the step in torch._foreach_* kernels, bit for bit the same: for p = 2 any step
    (scratch, copies and range_ok are not used there); mirror descent with p < 2 when p is a
    number, without momentum, η a number, tensors of one dtype, float32 or float64, no
    divisors or divisors with η = 1 (the one pass below); other steps ignore it.
    pieces: for a flat tensor that lays several end to end (the classes' `flat_duals`),
    views of it shaped as each: the mirror map's powers are taken piece by piece, so the
    step is that of each tensor bit for bit (`norms.power_`); not with the foreach path.

    With η = 1 (a float) and no momentum, t − g/D is taken in one pass (addcdiv: g/D rounded,
    then the subtraction, as the two passes round), t = w for p = 2 and θ for p < 2: callers
    that have checked that D/η is a normal number pass divisors D/η and η = 1."""
    mirror = isinstance(p, torch.Tensor) or p != 2.0
    if mirror and duals is None:
        raise ValueError("mirror descent with p != 2 needs the dual iterates `duals`")
    uses_momentum = isinstance(momentum, torch.Tensor) or momentum != 0.0
    if uses_momentum and buffers is None:
        raise ValueError("momentum needs the momentum `buffers`")
    if foreach and not mirror:
        _euclidean_foreach_(params, grads, divisors, lr, momentum, buffers, uses_momentum)
        return
    one_pass = not uses_momentum and not isinstance(lr, torch.Tensor) and lr == 1.0
    one_pass &= not mirror or (not isinstance(p, torch.Tensor) and p < 2.0)
    if foreach and _foreach_mirror(params, divisors, lr, p, mirror, uses_momentum, one_pass):
        if divisors is None:
            torch._foreach_add_(duals, grads, alpha=-lr)  # θ ← θ − η·g, as `_subtract_scaled_`
        else:  # θ − g/D in one pass, as the loop below
            torch._foreach_addcdiv_(duals, grads, _prepared(divisors, grads), value=-1.0)
        inverse_mirror_map_foreach_(duals, p, params)
        pairs = [(c, w) for c, w in zip(copies or [], params) if c is not None]
        if pairs:
            torch._foreach_copy_([c for c, _ in pairs], [w for _, w in pairs])
        return
    prepared = None if divisors is None else _prepared(divisors, grads)
    for k, (w, g) in enumerate(zip(params, grads)):
        d = None if prepared is None else prepared[k]
        theta = duals[k] if mirror else None
        copy = None if copies is None else copies[k]
        # a large CPU tensor's plain mirror step in one pass, bit for bit this loop's
        if mirror and not uses_momentum and (d is None or one_pass):
            if fused_mirror.fused_step_(w, g, theta, copy, d, lr, p):
                continue
        powers = None if scratch is None else scratch[k]
        views = None if pieces is None else pieces[k]
        if d is not None and one_pass:
            (theta if mirror else w).addcdiv_(g, d, value=-1.0)
            if mirror:
                inverse_mirror_map(theta, p, out=w, scratch=powers, pieces=views)
        else:
            buffer = None if buffers is None else buffers[k]
            _step_tensor_(w, g, d, lr, p, theta, momentum, buffer, powers, range_ok, views)
        if copy is not None:
            copy.copy_(w)


def _foreach_mirror(params, divisors, lr, p, mirror, uses_momentum, one_pass) -> bool:
    """Whether `step_` can take its foreach path (see there)."""
    if not mirror or uses_momentum or not params or (divisors is not None and not one_pass):
        return False
    if isinstance(lr, torch.Tensor) or isinstance(p, torch.Tensor) or not p < 2.0:
        return False
    dtypes = {w.dtype for w in params}  # (half precision: pow rounds its exponent there)
    return len(dtypes) == 1 and dtypes <= {torch.float32, torch.float64}


def _step_tensor_(
    w, g, d, lr, p, theta, momentum, buffer, scratch, range_ok=None, pieces=None
) -> None:
    """`step_` of one tensor (d: its divisor shaped for the runs, or None; `pieces` as
    `step_`'s for this tensor)."""
    if isinstance(momentum, torch.Tensor) or momentum != 0.0:
        u = buffer.mul_(per_run(momentum, g))
        u.add_(g) if d is None else u.addcdiv_(g, d)
    elif d is None:
        u = g
    else:  # u = g/D first: |u| ≤ 1, so no η/D or D/η can overflow or underflow
        u = g / d if scratch is None else torch.div(g, d, out=scratch)
    if theta is None:  # p = 2: no dual iterate
        _subtract_scaled_(w, u, lr)
    elif isinstance(p, torch.Tensor) or p > 2.0:
        _checked_mirror_update_(w, theta, u, lr, p, range_ok)
    else:  # p < 2: θ = |w|^{p−1} never leaves the range, and w⁺ leaves it only to ±inf
        _subtract_scaled_(theta, u, lr)
        # (u is spent: the scratch buffer is free for the map's powers)
        inverse_mirror_map(theta, p, out=w, scratch=scratch, pieces=pieces)


def _euclidean_foreach_(params, grads, divisors, lr, momentum, buffers, uses_momentum) -> None:
    """`step_` for p = 2 written with torch._foreach_* kernels (on a GPU, one launch per
    operation for all the tensors): the same operations on the same values, so the same
    results bit for bit."""
    d = None
    if divisors is not None:
        d = _prepared(divisors, grads)
    if uses_momentum:
        beta = (
            momentum
            if not isinstance(momentum, torch.Tensor)
            else [per_run(momentum, g) for g in grads]
        )
        torch._foreach_mul_(buffers, beta)
        torch._foreach_add_(buffers, grads) if d is None else torch._foreach_addcdiv_(
            buffers, grads, d
        )
        u = buffers
    elif d is not None and not isinstance(lr, torch.Tensor) and lr == 1.0:  # one pass, as step_
        torch._foreach_addcdiv_(params, grads, d, value=-1.0)
        return
    else:
        u = grads if d is None else torch._foreach_div(grads, d)
    if isinstance(lr, torch.Tensor):
        torch._foreach_sub_(params, torch._foreach_mul(u, [per_run(lr, x) for x in u]))
    else:
        torch._foreach_add_(params, u, alpha=-lr)


def _checked_mirror_update_(
    w: torch.Tensor,
    theta: torch.Tensor,
    u: torch.Tensor,
    lr: Number,
    p: Number,
    range_ok: torch.Tensor | None = None,
) -> None:
    """In place: θ ← θ − η·u, w ← (∇ψ)⁻¹(θ), where p > 2 (or p is per run). θ = |w|^{p−1}
    may then have overflowed or underflowed, and θ⁺ may land where the map loses digits;
    the entries where θ⁺ is not a normal number at least tiny/eps (or, for a per-run p ≤ 2,
    not finite) are redone by `log_domain_step`. One host sync; the log domain only when
    needed. With `range_ok` (see `step_`): no sync and no redo, the check's outcome kept there."""
    if w.numel() == 0:
        return
    if isinstance(lr, torch.Tensor):  # θ⁺ (θ is kept for the entries redone)
        new = torch.sub(theta, (u * per_run(lr, u)).to(theta.dtype))
    else:
        new = torch.sub(theta, u, alpha=lr)
    size = new.abs()  # |θ⁺|: checked, then raised to 1/(p − 1) in place
    info = torch.finfo(new.dtype)
    low = info.tiny / info.eps
    redo = None
    if range_ok is not None:
        range_ok.logical_and_(_in_range(size, p, low, info.max))
    elif not (size.amin().item() >= low and size.amax().item() <= info.max):  # False for NaN
        redo = ~_in_range(size, p, low, info.max, whole=False)
        entries = [t.expand_as(w)[redo] for t in (theta, w, u)]
        rates, exponents = (
            x if not isinstance(x, torch.Tensor) else per_run(x, w).expand_as(w)[redo]
            for x in (lr, p)
        )
    exponent = 1.0 / (per_run(p, size) - 1.0) if isinstance(p, torch.Tensor) else 1.0 / (p - 1.0)
    torch.copysign(power_(size, exponent), new, out=w)
    theta.copy_(new)
    if redo is not None:
        theta_new, w_new = log_domain_step(*entries, rates, exponents)
        theta[redo] = theta_new.to(theta.dtype)
        w[redo] = w_new.to(w.dtype)


def _in_range(size: torch.Tensor, p: Number, low: float, high: float, whole: bool = True):
    """Where |θ⁺| = size needs no log-domain redo (whole: whether that holds everywhere, as a
    tensor): a normal number in [low, high], or finite for a run whose p ≤ 2."""
    if whole and not isinstance(p, torch.Tensor):  # two reductions, no full-size mask
        return (size.amin() >= low) & (size.amax() <= high)  # False for NaN
    good = (size >= low) & (size <= high)
    if isinstance(p, torch.Tensor):
        good |= (per_run(p, size) <= 2.0) & torch.isfinite(size)
    return good.all() if whole else good


def _prepared(divisors: list, grads: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each divisor with no step at zero (`_no_step_at_zero`), shaped for its gradient's runs:
    once per distinct divisor (one for all, with "global"), and the (1,) divisors of an
    optimiser's tensors in one operation for all (a hundred tensors: one kernel, not a
    hundred)."""
    distinct = list({id(x): x for x in divisors}.values())
    first = distinct[0] if distinct else None
    kind = (first.dtype, first.device) if isinstance(first, torch.Tensor) else None
    if len(distinct) > 1 and all(
        isinstance(x, torch.Tensor) and x.shape == (1,) and (x.dtype, x.device) == kind
        for x in distinct
    ):
        fixed = _no_step_at_zero(torch.cat(distinct)).split(1)
    else:
        fixed = [_no_step_at_zero(x) for x in distinct]
    by_id = {id(x): y for x, y in zip(distinct, fixed)}
    # a one-element divisor broadcasts as it is (a class's tensors: R = 1), without a view
    return [
        y if y.numel() == 1 else per_run(y, g)
        for y, g in ((by_id[id(x)], g) for x, g in zip(divisors, grads))
    ]


def _no_step_at_zero(d: torch.Tensor) -> torch.Tensor:
    """D = 0 only for a zero gradient or a zero loss: no step (g/∞ = 0); NaN stays NaN."""
    return torch.where(d == 0, math.inf, d)


def _subtract_scaled_(target: torch.Tensor, u: torch.Tensor, lr: Number) -> None:
    if isinstance(lr, torch.Tensor):
        target.sub_(u * per_run(lr, u))
    else:
        target.add_(u, alpha=-lr)
