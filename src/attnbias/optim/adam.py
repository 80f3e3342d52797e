"""Adam for R runs at once, its moments kept in a rescaled representation so that no run's
g² underflows (or overflows) however small (or large) its gradient becomes.

torch.optim.Adam keeps m and v = EMA(g²) in the gradient's own scale: once |g| < ~1e-154
(float64; ~1e-19 in float32) g² leaves the float range, v becomes 0 or subnormal, and the step
m/(√v + ε) is wrong (0, or m/ε). Here each tensor of each run carries a power-of-two exponent k
(one per run, shape (R,)), with

    m = m̃·2^k,   v = ṽ·4^k,   ε̃ = ε·2^(−k),   g̃ = g·2^(−k) = G·exp(c − k·ln 2)

(the gradient arrives as G·exp(c), the engine's log-scaled form). Adam's step m̂/(√v̂ + ε) is
the same in the tilded quantities, so the step is Adam's; only where the largest of |g| and √v
leaves [2^(k−B), 2^(k+B)] (B = a quarter of the dtype's largest exponent: 256 in float64, 32
in float32) is k reset to that largest magnitude's exponent and m̃, ṽ multiplied by powers of
two (exact). While k = 0 every operation is torch's own, in torch's order: where nothing
underflows the step is torch.optim.Adam's bit for bit (tests/test_adam.py).

ε = 0 (the theory's ε → 0) is allowed: the step m̂/√v̂ at any gradient scale, and where √v̂ + ε̃
is 0 (the coordinate's gradient has been exactly 0, or its ṽ fell below the smallest
subnormal: possible once its √v̂ is more than 2^281 below the run's largest in float64, 2^42 in
float32) that coordinate does not move, where torch.optim.Adam(eps=0) gives 0/0 = NaN (or
m/0 = inf); elsewhere it is torch's step bit for bit.

Options as torch's: betas, eps, weight_decay (coupled, or decoupled as AdamW), amsgrad.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..norms import per_run

Column = float | torch.Tensor
"""A hyper-parameter: one float for every run, or an (R,) tensor (one per run)."""

LN2 = math.log(2.0)


def exponent_band(dtype: torch.dtype) -> int:
    """B: how far (in powers of two) the largest |g| or √v may drift from 2^k before k is
    reset; g̃² and ṽ then stay within 2^(±2B), far inside the dtype's normal range."""
    return int(math.log2(torch.finfo(dtype).max)) // 4


@dataclass
class Moments:
    """Adam's state of one parameter tensor of R runs, rescaled: m̃, ṽ (and AMSGrad's running
    max of ṽ), each (R, …), and k (R,), the power of two they are scaled by."""

    exp_avg: torch.Tensor
    exp_avg_sq: torch.Tensor
    exponent: torch.Tensor
    max_exp_avg_sq: torch.Tensor | None = None

    @classmethod
    def zeros(cls, param: torch.Tensor, amsgrad: bool = False) -> Moments:
        return cls(
            torch.zeros_like(param),
            torch.zeros_like(param),
            torch.zeros(param.shape[0], dtype=param.dtype, device=param.device),
            torch.zeros_like(param) if amsgrad else None,
        )

    def take(self, rows: torch.Tensor) -> Moments:
        """The state of runs `rows` only."""
        vmax = self.max_exp_avg_sq
        return Moments(
            self.exp_avg[rows],
            self.exp_avg_sq[rows],
            self.exponent[rows],
            None if vmax is None else vmax[rows],
        )

    def true_scale(self) -> dict[str, torch.Tensor]:
        """m and v (and max v) as torch.optim.Adam holds them (underflowing as its do)."""
        k = self.exponent
        out = {"exp_avg": ldexp(self.exp_avg, k), "exp_avg_sq": ldexp(self.exp_avg_sq, 2 * k)}
        if self.max_exp_avg_sq is not None:
            out["max_exp_avg_sq"] = ldexp(self.max_exp_avg_sq, 2 * k)
        return out


def ldexp(x: torch.Tensor, exponent: torch.Tensor) -> torch.Tensor:
    """x·2^exponent (exponent an integer per run, (R,)), exact wherever the result is normal,
    0 or ±inf where it under- or overflows, never NaN for finite x (0·2^2500 is 0): as three
    factors 2^(e/3) of one sign, each normal, so that no partial product leaves the range the
    result does not (torch.ldexp multiplies by 2^exponent itself, infinite beyond 2^1023, and
    0·inf is NaN). |exponent| is clipped at 3·(emax − 1), beyond which every finite nonzero
    x·2^exponent is 0 or inf already."""
    limit = 3 * (int(math.log2(torch.finfo(x.dtype).max)) - 1)
    e = exponent.clamp(-limit, limit)
    third = torch.trunc(e / 3)
    rest = e - 2 * third
    factors = torch.exp2(third)
    return x * per_run(factors, x) * per_run(factors, x) * per_run(torch.exp2(rest), x)


def log2_top(x: torch.Tensor) -> torch.Tensor:
    """log₂ of each run's largest |entry| (−inf for a run of zeros)."""
    return torch.log2(x.detach().abs().flatten(1).amax(1))


def new_exponent(
    moments: Moments, grad: torch.Tensor, log_scale: torch.Tensor, extra_top=None
) -> torch.Tensor:
    """k for this step: the old one while the largest of |g| (= |G|·e^c; `extra_top`: log₂ of
    a further term, coupled weight decay's λ|w|) and √v stays within the band of 2^k, else
    that largest magnitude's exponent."""
    top = log2_top(grad) + log_scale / LN2
    if extra_top is not None:
        top = torch.maximum(top, extra_top)
    for v in (moments.exp_avg_sq, moments.max_exp_avg_sq):
        if v is not None:
            top = torch.maximum(top, moments.exponent + log2_top(v) / 2)
    k = moments.exponent
    band = exponent_band(grad.dtype)
    keep = ~torch.isfinite(top) | ((top - k).abs() <= band)
    return torch.where(keep, k, torch.floor(top))


def rescale_(moments: Moments, exponent: torch.Tensor) -> None:
    """Express the moments at the power of two `exponent` (exact: multiplications by powers
    of two; what falls below the smallest subnormal is below 2^(−2B) of the largest entry,
    where Adam's step does not see it)."""
    shift = (moments.exponent - exponent).clamp(-2200.0, 1000.0)  # 0 below, finite above
    if not bool((shift != 0).any()):
        return
    m = moments.exp_avg
    m.copy_(ldexp(m, shift))
    for v in (moments.exp_avg_sq, moments.max_exp_avg_sq):
        if v is not None:
            v.copy_(ldexp(v, 2 * shift))
    moments.exponent.copy_(exponent)


def _times(x: torch.Tensor, value: Column) -> Column:
    return value if not isinstance(value, torch.Tensor) else per_run(value, x)


@torch.no_grad()
def adam_step_(
    param: torch.Tensor,
    grad: torch.Tensor,
    log_scale: torch.Tensor,
    moments: Moments,
    *,
    step_size: Column,
    bias_correction2_sqrt: Column,
    one_minus_beta1: Column,
    beta2: Column,
    one_minus_beta2: Column,
    eps: Column,
    weight_decay: Column = 0.0,
    decay_factor: Column | None = None,
) -> None:
    """One Adam step of R runs in place, torch.optim.Adam's operations in its order.

    param, grad: (R, …); the gradient is grad·exp(log_scale) (log_scale (R,)). Every
    hyper-parameter is torch's own scalar for a step (computed by the caller as torch does:
    step_size = lr/(1 − β₁^t), bias_correction2_sqrt = (1 − β₂^t)^½): a float or (R,).
    weight_decay: coupled λ (g ← g + λw); decay_factor: decoupled, w ← w·(1 − lr·λ) (AdamW;
    None: none)."""
    coupled = not isinstance(weight_decay, float) or weight_decay != 0.0
    extra = None
    if coupled:
        extra = log2_top(param) + torch.log2(torch.as_tensor(weight_decay, dtype=param.dtype))
    exponent = new_exponent(moments, grad, log_scale, extra)
    rescale_(moments, exponent)
    g = grad * per_run(torch.exp(log_scale - exponent * LN2), grad)
    if decay_factor is not None:
        param.mul_(_times(param, decay_factor))
    if coupled:
        wd = _times(param, weight_decay)
        scaled = ldexp(param, -exponent)
        g = g.add(scaled, alpha=wd) if isinstance(wd, float) else g + wd * scaled
    m, v = moments.exp_avg, moments.exp_avg_sq
    m.lerp_(g, _times(m, one_minus_beta1))
    v.mul_(_times(v, beta2))
    c2 = _times(v, one_minus_beta2)
    v.addcmul_(g, g, value=c2) if isinstance(c2, float) else v.add_(c2 * g * g)
    if moments.max_exp_avg_sq is not None:
        torch.maximum(moments.max_exp_avg_sq, v, out=moments.max_exp_avg_sq)
        v = moments.max_exp_avg_sq
    eps_scaled = ldexp(torch.as_tensor(eps, dtype=param.dtype).expand_as(exponent), -exponent)
    denom = (v.sqrt() / _times(v, bias_correction2_sqrt)).add_(per_run(eps_scaled, v))
    # ε = 0 where v̂ is 0 (no gradient yet, or below ṽ's range): that coordinate does not move
    denom.masked_fill_(denom == 0, math.inf)
    size = _times(param, step_size)
    if isinstance(size, float):
        param.addcdiv_(m, denom, value=-size)
    else:
        param.add_(-size * m / denom)
