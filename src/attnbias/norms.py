"""Entrywise ℓp norms and the ℓp mirror map, computed so that no scale of input underflows or
overflows (docs/theory.md#algorithms and #numerics).

Every function reduces over `dim` (a tuple of trailing dimensions, all of them when None) and
keeps the leading ones as a batch; an exponent p may be a float or a tensor that broadcasts
against the batch (one p per run). These are the only implementations in the package: the
optimisers, the batched engine, the metrics and the SVM solvers all call them; `lp_norm` is the
one ℓp norm, its variants (`NORM_MODES`) modes of one call.
"""

from __future__ import annotations

import functools
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


def power_(
    x: torch.Tensor, e: Exponent, scratch: torch.Tensor | None = None, pieces=None
) -> torch.Tensor:
    """In place: x ← x^e for x ≥ 0 and e > 0; exp(e·log x) for a tensor of exponents (0 stays
    0).

    `pieces`: views that split x into the tensors it lays end to end (a flat buffer of
    several tensors), or None. torch.pow is then taken on each piece: on the CPU its
    vectorised and scalar paths may round an entry differently (by an ulp), and a tensor's
    last entries take the scalar one, so only piece by piece are x's powers those of the
    tensors bit for bit.

    An exponent that is a whole number as x's dtype holds it (torch.pow rounds it so: in
    float32 the q = 1.1/0.1 = 10.999… of p = 1.1 is 11) is computed by repeated squaring, a
    few multiplications instead of a pow per entry (within a few ulps of torch.pow).
    `scratch`, shaped like x, holds the intermediate powers (allocated when None)."""
    if isinstance(e, torch.Tensor):
        return x.log_().mul_(e).exp_()
    if e == 1.0:
        return x
    if e == 0.5:
        return x.sqrt_()
    whole = whole_exponent(e, x.dtype)
    if whole is None and pieces is not None:
        torch._foreach_pow_(pieces, e)
        return x
    if whole is None:
        return x.pow_(e)
    if whole == 2:
        return x.mul_(x)
    # r lives in scratch and the last operation writes x
    steps = squaring_steps(whole)
    r = torch.mul(x, x, out=scratch) if scratch is not None else x * x
    for op in steps[1:-1]:
        r.mul_(r) if op == SQUARE else r.mul_(x)
    return torch.mul(r, r, out=x) if steps[-1] == SQUARE else x.mul_(r)


SQUARE, TIMES_BASE = 0, 1  # the steps of `squaring_steps` (ints: a compiled kernel reads them)


def squaring_steps(whole: int) -> list[int]:
    """x^whole by repeated squaring, left to right over the bits of `whole`: r ← r² for each
    bit after the leading one (SQUARE), then r ← r·x for a set bit (TIMES_BASE)."""
    steps = []
    for bit in bin(whole)[3:]:
        steps += [SQUARE, TIMES_BASE] if bit == "1" else [SQUARE]
    return steps


# repeated squaring beats torch.pow up to here; the dtypes whose pow rounds e to their own type
MAX_WHOLE_EXPONENT = 64
WHOLE_EXPONENT_DTYPES = (torch.float32, torch.float64)


@functools.lru_cache(maxsize=256)
def whole_exponent(e: float, dtype: torch.dtype) -> int | None:
    """e as an int when torch.pow on a `dtype` tensor takes it as a whole number in
    [2, MAX_WHOLE_EXPONENT]; otherwise None."""
    if dtype not in WHOLE_EXPONENT_DTYPES or not math.isfinite(e):
        return None
    held = float(torch.tensor(e, dtype=dtype))
    if held != round(held) or not 2 <= held <= MAX_WHOLE_EXPONENT:
        return None
    return int(held)


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


# The variants of the one ℓp norm, as torch.optim keeps Adam's single-tensor, foreach and
# fused kernels behind one call: each is the scaled norm below but for "foreach", which the
# optimisers' quick path checks itself (`underflow_floor`) and redoes with "scaled".
NORM_MODES = ("scaled", "fused", "foreach", "foreach_scaled")


def lp_norm(x, p: Exponent = 2.0, dim=None, *, scratch=None, mode: str = "scaled"):
    """‖x‖_p = (Σ |x_k|^p)^{1/p} over `dim`, for p ≥ 1 or p = ∞; x a tensor, or an array (read
    as float64).

    `mode` (one of `NORM_MODES`):
    - "scaled": m·‖x/m‖_p with m the largest |x_k|, so tiny late-training gradients (whose
      p-th powers underflow) and huge ones (whose powers overflow) get their true norm. NaN
      in, NaN out; an infinite entry gives ∞. `scratch`, one or two tensors shaped like x (the
      second for the powers of a whole exponent), avoids allocating temporaries (the
      optimisers pass them for large parameters); with it, the ℓ2 norm of a large CPU tensor
      may take a two-pass unscaled path when that is provably as accurate. Without it (the
      metrics, the solvers) every run's norm is computed alike, whatever else is in the batch.
    - "fused": the engine's fused step: the same scaling in the two buffers `scratch`
      (required), with x^{k+1/2} as x^k·√x (`half_power_`: within an ulp of pow, several
      times faster), no host synchronisation.
    - "foreach": x a list of tensors, p = 2, dim None: each tensor's sqrt(Σ x²) without the
      scaling passes, as one float64 tensor (k,) (`unscaled_two_norms`: right to a few ulps
      where finite and at least `underflow_floor`; the caller redoes the others "scaled").
    - "foreach_scaled": x a list of non-empty tensors of one dtype and device, p a number,
      dim None: each tensor's "scaled" norm in multi-tensor calls, as one tensor (k,) of
      their dtype (`scaled_norms_foreach`: within FOREACH_NORM_ULPS ulps of "scaled")."""
    if mode not in NORM_MODES:
        raise ValueError(f"mode must be one of {', '.join(NORM_MODES)}, got {mode!r}")
    if mode == "foreach":
        if isinstance(p, torch.Tensor) or p != 2.0 or dim is not None or scratch is not None:
            raise ValueError("mode 'foreach' takes p = 2 over whole tensors, without scratch")
        return unscaled_two_norms(list(x))
    if mode == "foreach_scaled":
        if isinstance(p, torch.Tensor) or dim is not None or scratch is not None:
            raise ValueError("mode 'foreach_scaled' takes a number p over whole tensors")
        return scaled_norms_foreach(list(x), p)
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x, dtype=torch.float64)
    dims = _dims(x, dim)
    first, second = _two(scratch)
    if mode == "fused":
        if second is None:
            raise ValueError("mode 'fused' needs scratch: two buffers shaped like x")
        return _scaled_norm(x, p, dims, first, second, half_power_)
    if first is not None and not isinstance(p, torch.Tensor) and p == 2.0 and _is_large_on_cpu(x):
        direct = _unscaled_two_norm(x, dims, first)
        if direct is not None:
            return direct
    return _scaled_norm(x, p, dims, first, second, power_)


def _scaled_norm(x, p, dims, first, second, power) -> torch.Tensor:
    """m·‖x/m‖_p, m = max|x| per batch entry; `power(a, q, scratch)` raises in place."""
    a = torch.abs(x, out=first) if first is not None else x.abs()
    top = a.amax(dims, keepdim=True) if a.numel() else a.new_zeros([1] * a.dim())
    if not isinstance(p, torch.Tensor) and math.isinf(p):
        return top.squeeze(dims) if dims else top
    a.div_(top.clamp_min(smallest_positive(a.dtype)))  # = where(top > 0, top, 1): 0/tiny = 0
    q = per_run(p, top)
    total = power(a, q, second).sum(dims, keepdim=True)
    norm = power_(total, 1.0 / q) * top
    norm = torch.where(torch.isinf(top), top, norm)
    return norm.squeeze(dims) if dims else norm


# `scaled_norms_foreach`'s results agree with `lp_norm(x, p)` of each tensor to this many
# ulps of the dtype: the same operations on the same values but the 1/p-th power, which takes
# the k sums as one vector (torch's vectorised and scalar pow may each round by up to an ulp:
# 2), and the product by the maximum, rounded after that (1).
FOREACH_NORM_ULPS = 3


def scaled_norms_foreach(tensors: list[torch.Tensor], p: float) -> torch.Tensor:
    """‖x‖_p of each tensor (all its entries), scaled as `lp_norm`'s mode "scaled" is, in
    torch._foreach_* kernels: a handful of calls for all the tensors instead of a dozen each.
    One float tensor (k,) in the tensors' dtype; tensors non-empty, of one dtype and device;
    p a number ≥ 1 or ∞. Within FOREACH_NORM_ULPS ulps of `lp_norm(x, p)` of each (bit for
    bit but the final power and product); scale-safe alike (any magnitude; NaN in, NaN out;
    an infinite entry gives ∞). Allocates two copies of the tensors: for small ones."""
    magnitudes = torch._foreach_abs(tensors)
    tops = foreach_max(magnitudes)
    top = torch.stack(tops)
    if math.isinf(p):
        return top
    torch._foreach_clamp_min_(tops, smallest_positive(top.dtype))  # as `_scaled_norm`
    torch._foreach_div_(magnitudes, tops)
    _power_foreach_(magnitudes, p, whole_exponent(p, top.dtype))
    totals = torch.stack([m.sum() for m in magnitudes])
    norm = power_(totals, 1.0 / p).mul_(top)
    return torch.where(torch.isinf(top), top, norm)


def foreach_max(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """The largest entry of each (non-empty) tensor, 0-d each: one torch._foreach_max
    (torch ≥ 2.4), or an amax each (the same values: a maximum rounds nothing)."""
    if hasattr(torch, "_foreach_max"):
        return list(torch._foreach_max(tensors))
    return [t.amax() for t in tensors]


@functools.lru_cache(maxsize=16)
def smallest_positive(dtype: torch.dtype) -> float:
    """The dtype's smallest positive (subnormal) number."""
    info = torch.finfo(dtype)
    return info.tiny * info.eps


def half_power_(x: torch.Tensor, e: Exponent, scratch: torch.Tensor | None) -> torch.Tensor:
    """x ← x^e (x ≥ 0) as `power_`, but x^{k+1/2} (k ≥ 1) as x^k·√x: within an ulp of `pow`,
    and several times faster than its scalar loop."""
    if isinstance(e, torch.Tensor) or e < 1.5 or (2 * e) % 2 != 1:
        return power_(x, e, scratch)
    root = torch.sqrt(x, out=scratch) if scratch is not None else torch.sqrt(x)
    return power_(x, math.floor(e)).mul_(root)


# A large CPU tensor's ℓ2 norm without the scaling passes, kept only when provably as good as
# the scaled one; GPUs always scale, which needs no host sync.
UNSCALED_NORM_MIN_SIZE = 1 << 16
UNSCALED_NORM_DTYPES = (torch.float32, torch.float64)


def _is_large_on_cpu(x: torch.Tensor) -> bool:
    return (
        x.device.type == "cpu"
        and x.numel() >= UNSCALED_NORM_MIN_SIZE
        and x.dtype in UNSCALED_NORM_DTYPES
    )


def _unscaled_two_norm(x: torch.Tensor, dims, scratch) -> torch.Tensor | None:
    """sqrt(Σ x²) in two passes (torch.sum's cascade summation: torch.linalg.vector_norm
    accumulates float32 too coarsely, 4e-4 off at 10M entries), when no square can have
    underflowed or overflowed enough to matter: Σx² is finite and at least n·tiny/eps (a
    square flushed to 0 or to a subnormal loses less than tiny, so all n of them lose less
    than eps of the sum). Else None. One host sync."""
    squares = torch.mul(x, x, out=scratch) if scratch is not None else x * x
    total = squares.sum(dims, keepdim=True)
    n = x.numel() // max(total.numel(), 1)
    info = torch.finfo(x.dtype)
    if not bool(((total >= n * info.tiny / info.eps) & torch.isfinite(total)).all()):
        return None
    norm = total.sqrt_()
    return norm.squeeze(dims) if dims else norm


# The optimisers' fast path: ℓ2 norms of many tensors without the scaling passes, checked
# afterwards (`underflow_floor`) and redone by `lp_norm` where the check fails.
# torch.linalg.vector_norm accumulates a long float32 vector coarsely (4e-4 off at 10M entries,
# 4e-6 at 590K), a short one to about an ulp: tensors above NORM_ROWS_ABOVE entries are taken
# by rows of NORM_ROW, and then the norm of the rows' norms.
NORM_ROW = 1024
NORM_ROWS_ABOVE = 1 << 12


def unscaled_two_norms(tensors: list[torch.Tensor]) -> torch.Tensor:
    """sqrt(Σ x²) of each tensor, as one float64 tensor (k,), computed without scaling: one
    reduction over each tensor, and one torch._foreach_norm for all of them. Right to a few
    ulps of the tensor's dtype where it is finite and at least `underflow_floor`; below that
    floor squares flushed to zero may matter, and beyond the range they overflowed (∞): take
    `lp_norm` there. NaN in, NaN out. On CUDA one torch._foreach_norm of the tensors
    themselves (its kernel sums in blocks, as the rows here do on the CPU)."""
    if tensors and all(t.is_cuda for t in tensors):
        return torch.stack(torch._foreach_norm(tensors)).double()
    parts = []
    for t in tensors:
        n = t.numel()
        if n <= NORM_ROWS_ABOVE:
            parts.append(t)
        elif n % NORM_ROW == 0 and t.is_contiguous():
            parts.append(torch.linalg.vector_norm(t.view(-1, NORM_ROW), dim=1))
        else:
            flat, whole = t.reshape(-1), n - n % NORM_ROW
            rows = torch.linalg.vector_norm(flat[:whole].view(-1, NORM_ROW), dim=1)
            parts.append(torch.cat((rows, torch.linalg.vector_norm(flat[whole:]).reshape(1))))
    return torch.stack(torch._foreach_norm(parts)).double()


@functools.lru_cache(maxsize=4096)
def underflow_floor(numel: int, dtype: torch.dtype) -> float:
    """The smallest ℓ2 norm of `numel` entries of `dtype` that an unscaled sum of squares
    gets right: each square flushed to zero or rounded as a subnormal loses less than the
    smallest normal number `tiny`, so all of them lose less than eps of a sum ≥ numel·tiny/eps."""
    info = torch.finfo(dtype)
    return math.sqrt(numel * info.tiny / info.eps)


def _two(scratch) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    if scratch is None or isinstance(scratch, torch.Tensor):
        return scratch, None
    return (*scratch, None, None)[:2]


def mirror_map(w: torch.Tensor, p: Exponent, *, out=None, scratch=None) -> torch.Tensor:
    """∇ψ(w) = sign(w)|w|^{p−1} for ψ(w) = (1/p)‖w‖_p^p, entrywise (a tensor p holds one
    exponent per leading index). `scratch`: a tensor shaped like w for the powers of a whole
    exponent."""
    return _signed_power(w, per_run(p, w), lambda p: p - 1.0, out, scratch)


def inverse_mirror_map(
    theta: torch.Tensor, p: Exponent, *, out=None, scratch=None, pieces=None
) -> torch.Tensor:
    """(∇ψ)⁻¹(θ) = sign(θ)|θ|^{1/(p−1)}. `pieces`: with `out`, views splitting it into the
    tensors it lays end to end (`power_`).

    Both maps round as IEEE arithmetic does: a result beyond the dtype's range is ±inf, one
    below its smallest normal number is subnormal or 0. (For p > 2, ∇ψ(w) = sign(w)|w|^{p−1}
    leaves the range for weights that are not extreme at all: |w| > 1.43 at p = 2000 in
    float64. `log_domain_step` takes a mirror step from such θ.)"""
    return _signed_power(theta, per_run(p, theta), lambda p: 1.0 / (p - 1.0), out, scratch, pieces)


def inverse_mirror_map_foreach_(thetas: list[torch.Tensor], p: float, outs: list[torch.Tensor]):
    """outs ← (∇ψ)⁻¹(θ) of each tensor, for one p (a number) and tensors of one dtype: the
    arithmetic of `inverse_mirror_map` (the same roundings, bit for bit) in torch._foreach_*
    kernels — on a GPU one launch an operation for all tensors — except the final copysign,
    which has no foreach kernel (one per tensor)."""
    torch._foreach_copy_(outs, thetas)
    if p == 2.0:
        return
    e = 1.0 / (p - 1.0)
    whole = whole_exponent(e, thetas[0].dtype)
    if whole is not None and whole % 2 == 0:  # from θ² = |θ|², as `_signed_power`
        torch._foreach_mul_(outs, thetas)
        whole, e = whole // 2, float(whole // 2)
    else:
        torch._foreach_abs_(outs)
    _power_foreach_(outs, e, whole)
    for w, theta in zip(outs, thetas):
        w.copysign_(theta)


def _power_foreach_(xs: list[torch.Tensor], e: float, whole: int | None) -> None:
    """`power_` of each tensor (e a number; `whole`: `whole_exponent(e)`), in place."""
    if e == 1.0:
        return
    if e == 0.5:
        torch._foreach_sqrt_(xs)
    elif whole is None:
        torch._foreach_pow_(xs, e)
    elif whole == 2:
        torch._foreach_mul_(xs, xs)
    else:  # repeated squaring, as `power_`
        steps = squaring_steps(whole)
        r = torch._foreach_mul(xs, xs)
        for op in steps[1:-1]:
            torch._foreach_mul_(r, r) if op == SQUARE else torch._foreach_mul_(r, xs)
        if steps[-1] == SQUARE:
            torch._foreach_mul_(r, r)
            torch._foreach_copy_(xs, r)
        else:
            torch._foreach_mul_(xs, r)


def _signed_power(x, p, exponent, out, scratch, pieces=None):
    """sign(x)|x|^e with e = exponent(p): a few passes and no temporary when `out` (and for a
    whole exponent `scratch`) is given. An even whole e starts from x² = |x|², which saves
    the pass that takes |x|."""
    if not isinstance(p, torch.Tensor) and p == 2.0:
        return x.clone() if out is None else out.copy_(x)
    e = exponent(p)
    whole = None if isinstance(e, torch.Tensor) else whole_exponent(e, x.dtype)
    if whole is not None and whole % 2 == 0:
        y = torch.mul(x, x, out=out) if out is not None else x * x
        return power_(y, float(whole // 2), scratch).copysign_(x)
    y = torch.abs(x, out=out) if out is not None else x.abs()
    return power_(y, e, scratch, pieces if out is not None else None).copysign_(x)


def log_domain_step(
    theta: torch.Tensor, w: torch.Tensor, u: torch.Tensor, lr: Exponent, p: Exponent
) -> tuple[torch.Tensor, torch.Tensor]:
    """One mirror step θ⁺ = θ − η·u, w⁺ = (∇ψ)⁻¹(θ⁺), entrywise, for entries where θ, η·u or
    θ⁺ lie outside the dtype's range: returns (θ⁺, w⁺) in float64, θ⁺ rounded as IEEE does
    (±inf or 0 where it does not fit), w⁺ right to about (1 + |log w⁺|)·eps relative wherever
    it fits (±inf where it does not), and to a few eps where θ came from w and ηu is small.

    theta, w, u: tensors of matching entries (any shape); lr, p: numbers, or tensors of one
    value per entry. θ is trusted where it was representable: for p ≤ 2 always (|w|^{p−1}
    cannot leave the range, and θ keeps what w loses when w underflows), for p > 2 where
    θ is a normal number or w = 0; elsewhere (θ = ±inf, or 0 or subnormal beside w ≠ 0) it
    is taken from w, whose value carries it to (p − 1)·eps.

    Everything is in units of p − 1, so nothing overflows however large p is: with
    λ = log|θ|/(p−1), β = log|ηu|/(p−1) and L = max(λ, β),
        θ⁺ = e^{(p−1)L}·c,  c = sign(θ)·e^{(p−1)(λ−L)} − sign(u)·e^{(p−1)(β−L)} ∈ [−2, 2],
        w⁺ = sign(c)·exp(L + log|c|/(p−1))."""
    info = torch.finfo(theta.dtype)
    theta, w, u = (t.double() for t in (theta, w, u))
    lr, p = (torch.as_tensor(x, dtype=torch.float64, device=theta.device) for x in (lr, p))
    pm1 = p - 1.0
    size = theta.abs()
    trusted = (p <= 2.0) | (w == 0) | ((size >= info.tiny) & (size <= info.max))
    lam = torch.where(trusted, size.log() / pm1, w.abs().log())
    sign = torch.where(trusted, theta.sign(), w.sign())
    beta = (u.abs().log() + lr.log()) / pm1
    top = torch.maximum(lam, beta)
    top = torch.where(top == -math.inf, 0.0, top)  # θ = ηu = 0: c = 0, so θ⁺ = w⁺ = 0
    c = sign * torch.exp(pm1 * (lam - top)) - u.sign() * torch.exp(pm1 * (beta - top))
    log_c = c.abs().log() / pm1
    # w⁺ relative to e^λ where that is |w| exactly (θ taken from w): w⁺ = w where ηu is
    # negligible, and no |log w|·eps error; elsewhere (or where the ratio's exp would leave
    # the range) straight from the logarithm
    ratio = (top - lam) + log_c
    anchored = ~trusted & (w != 0) & torch.isfinite(w) & (ratio.abs() <= 700.0)
    magnitude = torch.where(anchored, w.abs() * torch.exp(ratio), torch.exp(top + log_c))
    return c.sign() * torch.exp(pm1 * top + c.abs().log()), c.sign() * magnitude
