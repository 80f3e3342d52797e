"""The divisor D of a step, one producer for the optimiser classes and the batched engine.

A step divides the gradient by D before the momentum and the mirror step (`functional.step_`):
each named step rule of `STEP_RULES` says what D is —

    "none"        D = 1 (plain steps)
    "per_tensor"  ‖g‖_q of each tensor, q = p/(p−1) the dual exponent of the mirror potential
    "global"      ‖(g_1, …, g_k)‖_q of all the tensors together (the papers' ‖∇L‖_q)
    "loss"        the loss L (η/L steps)
    "polyak"      1/η_t with Polyak's capped step size η_t, from its log (`polyak_log_step`;
                  the optimiser class: `polyak_divisor`)

`divisors` computes them for every run, one rule for all or a rule per run (the engine mixes
algorithms in one batch), with the norms computed as its caller's `norms` computes them (the
fused engine step in its workspace, the classes with small tensors together). `step_divisors`
is the classes' entry: for ℓ2 it takes the quick unscaled norms (one reduction a tensor) where
they can be vouched for, and it gives the factors D/η of the one-pass step. Norms are
scale-safe (`norms.lp_norm`), so any gradient that is not exactly zero has a unit direction.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping

import numpy as np
import torch

from ..norms import (
    dual_exponent,
    lp_norm,
    underflow_floor,
    unscaled_two_norms,
)
from .functional import Number, run_dims
from .guards import check_finite, not_finite
from .multi_tensor import small_on_cpu

# The step rules, by name; the engine's compiled kernels number them in this order.
STEP_RULES = ("none", "per_tensor", "global", "loss", "polyak")
# The scale at which each rule's divisor may take the gradient (the batched engine holds
# gradients in log scale, `engine.update.in_rule_scale`): "true", the gradient itself (D = 1,
# the loss, Polyak's: not scale-free); "own", each tensor at a scale of its own (D is the
# tensor's own norm); "shared", a run's tensors at one scale (D is a norm of all of them).
GRADIENT_SCALE = {
    "none": "true",
    "per_tensor": "own",
    "global": "shared",
    "loss": "true",
    "polyak": "own",  # its divisor carries each tensor's scale (`polyak_divisors`)
}
# What normalize=True means wherever it is taken (the optimiser classes, the engine's
# Algorithm): the papers' ‖∇L‖ over all parameters (it meant "per_tensor" before; CHANGELOG).
NORMALIZE_TRUE = "global"
# How a caller computes ‖g‖_q of each gradient: (grads, q) → one (R,) tensor each.
Norms = Callable[[list[torch.Tensor], Number], list[torch.Tensor]]


def gradient_norms(grads: list[torch.Tensor], q: Number, scratch=None) -> list[torch.Tensor]:
    """‖g‖_q of each tensor, per run: a list of (R,) tensors. `scratch`: for each gradient
    one or two buffers shaped like it (see `lp_norm`), or None."""
    scratch = scratch or [None] * len(grads)
    return [lp_norm(g, q, run_dims(g), scratch=s) for g, s in zip(grads, scratch)]


def global_norm(norms: list[torch.Tensor], q: Number) -> torch.Tensor:
    """‖(g_1, …, g_k)‖_q per run from the tensors' norms (equal to the norm of all entries)."""
    return norms[0] if len(norms) == 1 else lp_norm(torch.stack(norms, 1), q, dim=(1,))


def polyak_log_step(
    log_norm: torch.Tensor, log_gap: torch.Tensor, c: Number, cap: Number
) -> torch.Tensor:
    """log η_t = min{log γ_b, log(L − L*) − log c − 2 log‖g‖}: Polyak's capped step size
    (SPS_max) from the logs of ‖g‖ and of L − L*, so neither their underflow nor η_t's
    overflow (beyond ~1e308 once logit gaps pass ~700) decides it: γ_b = ∞ is exact. A zero
    gradient (log‖g‖ = −∞) takes the cap: its step is 0 whatever η_t; L ≤ L* (log = −∞)
    gives −∞, no step; NaN stays NaN."""
    like = {"dtype": log_norm.dtype, "device": log_norm.device}
    log_cap = torch.as_tensor(cap, **like).log()
    uncapped = log_gap - torch.as_tensor(c, **like).log() - 2.0 * log_norm
    uncapped = torch.where(log_norm == -math.inf, log_cap, uncapped)
    return torch.minimum(uncapped, log_cap)


def polyak_log_gap(
    loss: torch.Tensor, f_star: Number, log_risk: torch.Tensor | None = None
) -> torch.Tensor:
    """log(L − L*) per run (clamped at 0: −∞): from log_risk, the log of the risk taken
    scale-safely (`engine.kernel.Stack.log_risk`), for the runs whose L* is 0 (the ones whose
    risk is L − L* already among them), else from the difference L − L*."""
    direct = (loss - f_star).clamp(min=0.0).log()
    if log_risk is None:
        return direct
    return torch.where(torch.as_tensor(f_star, device=loss.device) == 0, log_risk, direct)


def polyak_divisors(
    grads: list[torch.Tensor],
    log_gap: torch.Tensor,
    c: Number,
    cap: Number,
    norms: Norms,
    log_scales: list[torch.Tensor] | None = None,
) -> list[torch.Tensor]:
    """Polyak's divisor of each tensor, (R,) each, for gradients ∂L/∂θ_k = exp(m_k)·G̃_k
    (grads: the G̃_k; log_scales: the m_k, None for 0): D_k = exp(−(log η_t + m_k)), so that
    G̃_k/D_k = η_t ∂L/∂θ_k is formed from logs, O(1) however small ∂L/∂θ and L − L* are
    (`polyak_log_step`, with log‖g‖ = ½ logsumexp_k 2(m_k + log‖G̃_k‖)). D_k = 0 (no step)
    only where η_t e^{m_k} = ∞ (a zero gradient with γ_b = ∞); a finite step beyond the
    dtype's range takes its smallest normal divisor (and overflows as it would)."""
    scales = log_scales or [0.0] * len(grads)
    logs = [m + n.log() for m, n in zip(scales, norms(grads, 2.0))]
    log_norm = logs[0] if len(logs) == 1 else 0.5 * torch.logsumexp(2.0 * torch.stack(logs), 0)
    log_step = polyak_log_step(log_norm, log_gap, c, cap)
    tiny = torch.finfo(log_step.dtype).tiny
    out = []
    for m in scales:
        exponent = log_step + m
        d = torch.exp(-exponent).clamp_(min=tiny)
        out.append(torch.where(exponent == math.inf, 0.0, d))
    return out


def polyak_divisor(
    sq_root: torch.Tensor, loss: torch.Tensor, f_star: Number, c: Number, cap: Number
) -> torch.Tensor:
    """1/η_t for η_t = min{(L − L*) / (c‖g‖²), γ_b}, given ‖g‖ (SPS_max, Loizou et al. 2021).

    Written as max{c‖g‖·(‖g‖/(L − L*)), 1/γ_b} so that no intermediate overflows before it
    matters: ‖g‖² underflowing to 0 gives the cap (as the true η_t would), L ≤ L* gives ∞
    (no step). A zero gradient (‖g‖ = 0, where 0·(0/0) would be NaN, e.g. at L = L* or with
    maximize) gives the cap too: the step g/D is 0 either way."""
    gap = (loss - f_star).clamp(min=0.0)
    inverse_cap = torch.as_tensor(cap, dtype=sq_root.dtype, device=sq_root.device).reciprocal()
    scaled = torch.where(sq_root == 0, 0.0, c * sq_root * (sq_root / gap))  # NaN stays NaN
    return torch.maximum(scaled, inverse_cap)  # γ_b = 0: ∞, no step


def polyak_divisor_of_numbers(
    sq_root: float, loss: float, f_star: float, c: float, cap: float, dtype: torch.dtype
) -> float:
    """`polyak_divisor` of one run from numbers on the host, in `dtype` (float32 or float64)
    as the tensors would hold them: the same operations in the same order, each rounded to
    the dtype as torch's are, so the same number bit for bit (tests/test_optim_polyak_host.py
    compares them) for an optimiser on the CPU, without a dozen operator calls on
    one-element tensors."""
    kind = np.dtype(str(dtype).removeprefix("torch.")).type
    with np.errstate(all="ignore"):
        sq, zero = kind(sq_root), kind(0.0)
        gap = np.maximum(kind(loss) - kind(f_star), zero)  # clamp: NaN stays NaN
        inverse_cap = kind(1.0) / kind(cap)
        scaled = zero if sq == 0 else kind(c) * sq * (sq / gap)
        return float(np.maximum(scaled, inverse_cap))


def divisors(
    grads: list[torch.Tensor],
    rule: str | Mapping[str, torch.Tensor],
    *,
    p: Number = 2.0,
    loss: torch.Tensor | None = None,
    f_star: Number = 0.0,
    c: Number = 1.0,
    cap: Number = math.inf,
    norms: Norms = gradient_norms,
    log_scales: list[torch.Tensor] | None = None,
    log_risk: torch.Tensor | None = None,
) -> list[torch.Tensor] | None:
    """The divisor D of each tensor, (R,) each; None for plain steps (D = 1). D = 0 (a zero
    gradient or loss) is passed on as it is: `functional.step_` takes no step there.

    rule: a name of `STEP_RULES` for every run, or {name: (R,) bool tensor of the runs that
    take it} for a batch that mixes rules (its runs of "none" get D = 1). p: mirror
    exponent, whose dual exponent q = p/(p−1) is the norm of "per_tensor" and "global"
    (q = 2 for gradient descent). loss: (R,) losses, needed by "loss" and "polyak"; f_star,
    c, cap: Polyak's L*, c and γ_b (∞: uncapped). norms: how the tensors' norms are computed
    (default `gradient_norms`). log_scales: Polyak's gradients are exp(m_k)·grads[k] with
    these m_k (`polyak_divisors`; None: grads in true scale). log_risk: the log of `loss`,
    scale-safe (`polyak_log_gap`), or None."""
    if isinstance(rule, str):
        if rule not in STEP_RULES:
            raise ValueError(f"rule must be one of {STEP_RULES}, got {rule!r}")
        if rule == "none":
            return None
        runs = {rule: None}
    else:
        unknown = set(rule) - set(STEP_RULES)
        if unknown:
            raise ValueError(f"rule names must be among {STEP_RULES}, got {sorted(unknown)}")
        runs = dict(rule)
    out: list = [1.0] * len(grads)  # "none" runs of a mixed batch: D = 1
    dual_norms = None
    for name, where in runs.items():
        if name == "none":
            continue
        if name in ("per_tensor", "global") and dual_norms is None:
            dual_norms = norms(grads, dual_exponent(p))
        if name == "per_tensor":
            values = dual_norms
        elif name == "global":
            values = [global_norm(dual_norms, dual_exponent(p))] * len(grads)
        elif name == "loss":
            values = [loss] * len(grads)
        else:  # "polyak": ‖g‖ over all tensors, ℓ2 whatever the potential
            log_gap = polyak_log_gap(loss, f_star, log_risk)
            values = polyak_divisors(grads, log_gap, c, cap, norms, log_scales)
        for k, value in enumerate(values):
            out[k] = value if where is None else torch.where(where, value, out[k])
    return out


def step_divisors(
    optimizer: str,
    grads: list[torch.Tensor],
    normalize: str,
    eta: float,
    culprit,
    *,
    p: float = 2.0,
    scratch=None,
) -> tuple[list[torch.Tensor], list[torch.Tensor | None]]:
    """The optimiser classes' divisors of a normalised step ("per_tensor" or "global"; grads
    with their run axis, one run): `divisors(grads, normalize, p=p)`, checked to be finite
    (FloatingPointError naming the culprit, as `check_finite`), and for each tensor the
    factor F = D/η of the one-pass step (`functional.step_` with divisors F and η = 1), or
    None where F is not a normal number. ℓ2 (p = 2) from the quick unscaled norms where they
    can be vouched for (`quick_two_norm_divisors`); else the scale-safe norms, the small
    tensors' together (`grouped_gradient_norms`, in `scratch`: a `ScratchSpace`)."""
    if p == 2.0:
        return quick_two_norm_divisors(optimizer, grads, normalize, eta, culprit)
    if normalize == "global" and takes_whole_group_norm(grads):
        found = [whole_group_norm(grads, dual_exponent(p), scratch)] * len(grads)
    else:
        norms = functools.partial(grouped_gradient_norms, scratch=scratch)
        found = divisors(grads, normalize, p=p, norms=norms)
    return found, quick_factors(optimizer, found, eta, culprit)


def takes_whole_group_norm(grads: list[torch.Tensor]) -> bool:
    """Whether `whole_group_norm` takes the group's global norm: a small CPU group
    (`multi_tensor.small_on_cpu`) of one dtype, float32 or float64, with some entries."""
    return (
        bool(grads)
        and len({g.dtype for g in grads}) == 1
        and grads[0].dtype in (torch.float32, torch.float64)
        and small_on_cpu(grads)
        and any(g.numel() for g in grads)
    )


def whole_group_norm(grads: list[torch.Tensor], q: float, scratch) -> torch.Tensor:
    """‖(g_1, …, g_k)‖_q of one run's gradients (`takes_whole_group_norm`), (1,): the scaled
    norm (`lp_norm`) of all their entries laid end to end in a flat buffer of `scratch` (a
    `ScratchSpace`), scaled by the largest of all. A dozen operations for the whole group,
    where the tensors' norms and then the norm of those took a dozen for each tensor (over
    40 % of a small model's normalised ℓ1.1 step); the same norm, scale-safe alike, to
    within the rounding of the sums (tests/test_optim_step_cost.py bounds the difference)."""
    entries, powers, views = scratch.laid_out(grads)
    torch._foreach_copy_(views, grads)
    return lp_norm(entries, q, scratch=(entries, powers)).reshape(1)


def quick_two_norm_divisors(
    optimizer: str, grads: list[torch.Tensor], normalize: str, eta: float, culprit
) -> tuple[list[torch.Tensor], list[torch.Tensor | None]]:
    """The divisors D that `divisors(grads, normalize)` gives for ℓ2 normalisation
    ("per_tensor" or "global"; grads with their run axis), from norms taken without scaling
    (`norms.unscaled_two_norms`: one reduction over each gradient instead of four); and for
    each tensor the factor F = D/η of the one-pass step (`functional.step_` with divisors F
    and η = 1), or None where F is not a normal number (that tensor takes D and η).

    A norm the unscaled sum cannot vouch for (below `norms.underflow_floor`, where squares
    flushed to zero could matter, or beyond its dtype's range) is recomputed by the
    scale-safe `lp_norm`, as `divisors` computes it, so no gradient is frozen by an
    underflowed norm. One host sync for all tensors; a second (`check_finite`, which raises
    FloatingPointError naming the parameter whose gradient is not finite) only where a norm
    was recomputed. `culprit` as for `check_finite`."""
    norms = unscaled_two_norms(grads)
    dtypes = [g.dtype for g in grads]
    if normalize == "per_tensor":
        kinds, sizes = dtypes, norms
        each = totals = norms.tolist()  # the one host sync
    else:  # one D in the dtype the tensors' norms promote to, as `divisors`'s
        kinds = [promoted(tuple(dtypes))]
        sizes, each, totals = global_two_norm(norms)
    # what follows decides on the host, in float64 as the tensors hold it
    floors = [underflow_floor(g.numel(), t) for g, t in zip(grads, dtypes)]
    if normalize == "per_tensor":
        tops = [finfo_max(t) for t in dtypes]
    else:
        floors = [math.hypot(*floors)]
        # each tensor's norm must fit its own dtype too, as the scale-safe ones do
        own = all(n <= finfo_max(t) for n, t in zip(each, dtypes))  # False for NaN
        tops = [finfo_max(kinds[0]) if own else -1.0]
    fits = [floor <= size <= top for size, floor, top in zip(totals, floors, tops)]
    normal = [ok and quotient_is_normal(size, eta, t) for ok, size, t in zip(fits, totals, kinds)]
    if normalize == "global" and not fits[0]:
        found = divisors(grads, "global")
        check_finite(optimizer, found, culprit)
        return found, [None] * len(grads)
    found, factors = one_per_run(sizes, kinds), one_per_run(sizes / eta, kinds)
    if normalize == "global":
        found, factors, normal = (x * len(grads) for x in (found, factors, normal))
    redo = [k for k, good in enumerate(fits) if not good]  # (per_tensor only, by now)
    for k in redo:
        found[k] = gradient_norms([grads[k]], 2.0)[0]
    if redo:
        check_finite(optimizer, [found[k] for k in redo], culprit)
    return found, [f if good else None for f, good in zip(factors, normal)]


def global_two_norm(norms: torch.Tensor) -> tuple[torch.Tensor, list[float], list[float]]:
    """`lp_norm(norms).reshape(1)`, the scale-safe ℓ2 norm of the tensors' norms (float64,
    ≥ 0 or NaN), and the values of both on the host. On a GPU in one host sync; on the CPU,
    where reading a value costs no synchronisation, the norms are read first and, where
    their largest is a positive finite number, `lp_norm`'s scaling by it is taken with that
    number: the same operations on the same values (five instead of a dozen)."""
    if norms.device.type != "cpu":
        sizes = lp_norm(norms).reshape(1)
        values = torch.cat((norms, sizes)).tolist()
        return sizes, values[:-1], values[-1:]
    each = norms.tolist()
    top = max(each, default=0.0)
    if not (0.0 < top < math.inf) or any(math.isnan(n) for n in each):
        sizes = lp_norm(norms).reshape(1)
        return sizes, each, sizes.tolist()
    scaled = torch.div(norms, top)  # (abs: the norms are ≥ 0 already)
    sizes = scaled.mul_(scaled).sum(0, keepdim=True).sqrt_().mul_(top)
    return sizes, each, sizes.tolist()


@functools.cache
def promoted(dtypes: tuple[torch.dtype, ...]) -> torch.dtype:
    """The dtype that tensors of these dtypes promote to."""
    return functools.reduce(torch.promote_types, dtypes)


@functools.cache
def finfo_max(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).max


# Tensors up to this many entries have their norms taken together ("foreach_scaled"),
# and all of a small group's (`multi_tensor.small_on_cpu`), instead of a dozen operations each.
SMALL_TENSOR = 1 << 12


def grouped_gradient_norms(grads: list[torch.Tensor], q: float, scratch) -> list[torch.Tensor]:
    """`gradient_norms(grads, q)`: the scale-safe ℓq norm of each gradient (with its run
    axis, one run), (1,) each; the small ones together, by dtype and device
    (`lp_norm`'s mode "foreach_scaled": within FOREACH_NORM_ULPS ulps of its "scaled"), the others
    each in `scratch` (a `ScratchSpace`)."""
    out: list = [None] * len(grads)
    small: dict[tuple[torch.dtype, torch.device], list[int]] = {}
    whole_group = small_on_cpu(grads)
    for k, g in enumerate(grads):
        if g.numel() and (whole_group or g.numel() <= SMALL_TENSOR):
            small.setdefault((g.dtype, g.device), []).append(k)
    for part in small.values():
        norms = lp_norm([grads[k] for k in part], q, mode="foreach_scaled")
        for k, norm in zip(part, norms.split(1)):
            out[k] = norm
    large = [k for k, x in enumerate(out) if x is None]
    if large:
        g = [grads[k] for k in large]
        for k, norm in zip(large, gradient_norms(g, q, scratch.views(g, 2))):
            out[k] = norm
    return out


def quick_factors(
    optimizer: str, divisors: list[torch.Tensor], eta: float, culprit
) -> list[torch.Tensor | None]:
    """For divisors D (one element each), checked here to be finite (FloatingPointError
    otherwise, as `check_finite` raises), the factors F = D/η of the one-pass step
    (`functional.step_` with divisors F and η = 1), or None where F is not a normal number.
    One host sync for all tensors; a divisor repeated ("global": one for all) is taken once."""
    distinct = list({id(d): d for d in divisors}.values())
    where = {id(d): j for j, d in enumerate(distinct)}
    kinds = [d.dtype for d in distinct]
    sizes = torch.stack([d.reshape(-1)[0] for d in distinct]).double()
    values = sizes.tolist()  # the one host sync
    if not all(math.isfinite(size) for size in values):
        raise not_finite(optimizer, culprit)
    normal = [quotient_is_normal(size, eta, t) for size, t in zip(values, kinds)]
    factors = [f if good else None for f, good in zip(one_per_run(sizes / eta, kinds), normal)]
    return [factors[where[id(d)]] for d in divisors]


def quotient_is_normal(size: float, eta: float, dtype: torch.dtype) -> bool:
    """`normal_number` of size/η, as float64 tensors divide (η = 0, a scheduler's warm-up:
    ∞ or NaN, never normal)."""
    return eta != 0.0 and normal_number(size / eta, dtype)


def normal_number(value: float, dtype: torch.dtype) -> bool:
    """Whether `value` (a float64) is a normal number of `dtype`, with a margin of 2 for the
    rounding into it (NaN: False)."""
    tiny, top = normal_range(dtype)
    return tiny <= abs(value) <= top


@functools.cache
def normal_range(dtype: torch.dtype) -> tuple[float, float]:
    """(2·tiny, max/2) of the dtype: `normal_number`'s bounds."""
    info = torch.finfo(dtype)
    return 2 * info.tiny, info.max / 2


def one_per_run(values: torch.Tensor, dtypes: list[torch.dtype]) -> list[torch.Tensor]:
    """Entry k of the (float64) values as a (1,) tensor of dtypes[k]: a divisor of one run,
    as `divisors` gives it (views of one converted tensor per dtype)."""
    converted = {t: values.to(t).view(-1, 1) for t in set(dtypes)}
    return [converted[t][k] for k, t in enumerate(dtypes)]
