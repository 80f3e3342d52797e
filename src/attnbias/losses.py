"""Margin losses ℓ(u) of the prediction margin u = y·f, stable for |u| up to 1e6.

Each loss is a function of u with its derivative ℓ'(u) and log|ℓ'(u)| (for gradients kept in
log scale where ℓ'(u) itself underflows), and its excess ℓ(u* + δ) − ℓ(u*) from δ itself;
`risk` averages over samples, `optimal_token_excess` is L − L* over the optimal tokens.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class MarginLoss:
    """A margin loss ℓ(u): its name, its value and derivative ℓ'(u) elementwise (tensors of any
    shape), and log|ℓ'(u)|; calling it gives the value."""

    name: str
    value: Callable[[torch.Tensor], torch.Tensor]
    derivative: Callable[[torch.Tensor], torch.Tensor]
    log_abs_derivative: Callable[[torch.Tensor], torch.Tensor]  # log|ℓ'(u)|, ℓ' < 0 for all three
    # (u*, δ) ↦ ℓ(u* + δ) − ℓ(u*) from δ, accurate where ℓ(u) − ℓ(u*) rounds to 0
    excess: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    # (u*, log(−δ)) ↦ log(ℓ(u* + δ) − ℓ(u*)) for δ ≤ 0, finite where the excess underflows
    log_excess: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    # log ℓ(u), finite where ℓ(u) underflows; None where ℓ takes both signs (correlation)
    log_value: Callable[[torch.Tensor], torch.Tensor] | None = None

    def __call__(self, u: torch.Tensor) -> torch.Tensor:
        return self.value(u)


def _logistic(u):
    return F.softplus(-u)


def _logistic_grad(u):
    return -torch.sigmoid(-u)


def _exponential(u):
    return torch.exp(-u)


def _exponential_grad(u):
    return -torch.exp(-u)


def _correlation(u):
    return -u


def _correlation_grad(u):
    return -torch.ones_like(u)


def _logistic_excess(u_star, delta):
    # log((1 + e^{−u})/(1 + e^{−u*})) = log1p(σ(−u*)·expm1(−δ)), σ(−u*) = e^{−u*}/(1 + e^{−u*})
    return torch.log1p(torch.sigmoid(-u_star) * torch.expm1(-delta))


def _exponential_excess(u_star, delta):
    return torch.exp(-u_star) * torch.expm1(-delta)  # e^{−u} − e^{−u*}


def _correlation_excess(u_star, delta):
    return -delta


# below this log, log(expm1(x)) and log(log1p(x)) are taken as log x ± x/2 (exact in float64)
_LOG_SMALL = -30.0


def log_expm1_of_log(a):
    """log(e^x − 1) for x = e^a > 0, finite however small x is."""
    x = torch.exp(a)
    return torch.where(a < _LOG_SMALL, a + x / 2, x + torch.log(-torch.expm1(-x)))


def log_log1p_of_log(a):
    """log(log(1 + x)) for x = e^a > 0, finite however small x is."""
    return torch.where(a < _LOG_SMALL, a - torch.exp(a) / 2, torch.log(F.softplus(a)))


def _logistic_log_excess(u_star, log_drop):
    # log log1p(σ(−u*)·expm1(−δ)), log σ(−u*) = −softplus(u*)
    return log_log1p_of_log(log_expm1_of_log(log_drop) - F.softplus(u_star))


def _exponential_log_excess(u_star, log_drop):
    return log_expm1_of_log(log_drop) - u_star


def _correlation_log_excess(u_star, log_drop):
    return log_drop


logistic = MarginLoss(
    "logistic", _logistic, _logistic_grad, lambda u: -F.softplus(u), _logistic_excess,
    _logistic_log_excess, lambda u: log_log1p_of_log(-u),  # log log(1 + e^{−u})
)  # fmt: skip
exponential = MarginLoss(
    "exponential", _exponential, _exponential_grad, lambda u: -u, _exponential_excess,
    _exponential_log_excess, lambda u: -u,
)  # fmt: skip
correlation = MarginLoss(
    "correlation", _correlation, _correlation_grad, torch.zeros_like, _correlation_excess,
    _correlation_log_excess,
)  # fmt: skip

LOSSES = {loss.name: loss for loss in (logistic, exponential, correlation)}


def get_loss(loss: str | MarginLoss) -> MarginLoss:
    """The MarginLoss named `loss` ("logistic", "exponential" or "correlation"), or `loss`
    itself if it is one; ValueError naming the choices otherwise."""
    if isinstance(loss, MarginLoss):
        return loss
    try:
        return LOSSES[loss]
    except KeyError:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}") from None


def risk(u: torch.Tensor, loss: str | MarginLoss = "logistic") -> torch.Tensor:
    """Empirical risk (1/n) Σ_i ℓ(u_i) over the last dimension."""
    return get_loss(loss).value(u).mean(-1)


def log_risk(u: torch.Tensor, loss: str | MarginLoss) -> torch.Tensor:
    """log((1/n) Σ_i ℓ(u_i)) over the last dimension, finite however far the risk lies below
    float64's range (margins beyond ~745 for the logistic loss), so Polyak's step with L* = 0
    (`optim.divisors.polyak_log_step`) never sees a risk of 0 while the run still moves."""
    loss = get_loss(loss)
    if loss.log_value is None:
        raise ValueError(f"the {loss.name} loss takes both signs: its risk has no log")
    return torch.logsumexp(loss.log_value(u), -1) - math.log(u.shape[-1])


def optimal_token_excess(
    scores: torch.Tensor, gamma: torch.Tensor, opt: torch.Tensor, loss: str | MarginLoss
) -> torch.Tensor:
    """L − L* = (1/n) Σ_i ℓ(u_i) − ℓ(γ_{i,opt_i}), over the last sample axis, for a fixed head:
    u_i = Σ_t s_{i,t} γ_{i,t} the margin under the attention scores s (..., n, T), γ the
    tokens' margins y_i vᵀx_{i,t} (..., n, T), opt (..., n) each sample's optimal token, L* the
    loss with all attention on it.

    Scale-safe: the margin's shortfall is δ_i = u_i − γ_opt = Σ_{t≠opt} s_t (γ_t − γ_opt),
    a sum of the other tokens' scores (representable down to ~1e-308), and each sample's excess
    is `MarginLoss.excess`(γ_opt, δ). L − L* taken as the difference of the two losses is 0
    once it falls below L*'s float resolution (~1e-16·L*); this is not."""
    loss = get_loss(loss)
    index = opt.unsqueeze(-1)
    gamma_opt = gamma.gather(-1, index)
    shortfall = (scores * (gamma - gamma_opt)).sum(-1)  # the opt token's term is exactly 0
    return loss.excess(gamma_opt.squeeze(-1), shortfall).mean(-1)


def log_optimal_token_excess(
    log_scores: torch.Tensor, gamma: torch.Tensor, opt: torch.Tensor, loss: str | MarginLoss
) -> torch.Tensor:
    """log(L − L*) of `optimal_token_excess`, from the scores' logs (log s = a − logsumexp a):
    finite however far the other tokens' scores, and L − L* with them, lie below float64's
    range (logit gaps beyond ~745), so Polyak's step (`optim.divisors.polyak_log_step`) never
    sees a gap of 0 while the run still moves.

    Each sample's margin drop −δ_i = Σ_{t≠opt} s_t (γ_opt − γ_t) is a logsumexp of
    log s_t + log(γ_opt − γ_t). Needs γ_opt ≥ γ_t for every token (the problems' optimal
    tokens have the largest margins: `margins_ordered`); where a token's margin exceeds the
    optimal one's, δ_i may have either sign and its log is not this."""
    loss = get_loss(loss)
    gamma_opt = gamma.gather(-1, opt.unsqueeze(-1))
    drops = (gamma_opt - gamma).clamp(min=0.0)  # 0 at opt itself: log 0 = −∞, no term
    log_drop = torch.logsumexp(log_scores + torch.log(drops), -1)
    per_sample = loss.log_excess(gamma_opt.squeeze(-1), log_drop)
    return torch.logsumexp(per_sample, -1) - math.log(per_sample.shape[-1])


def margins_ordered(gamma: torch.Tensor, opt: torch.Tensor) -> torch.Tensor:
    """Whether every sample's optimal token has the largest margin γ (over the sample axis,
    the last but one): `log_optimal_token_excess`'s condition."""
    gamma_opt = gamma.gather(-1, opt.unsqueeze(-1))
    return (gamma <= gamma_opt).flatten(-2).all(-1)


def log_exponential_risk(u: torch.Tensor) -> torch.Tensor:
    """log((1/n) Σ e^{-u_i}) without overflow: the exponential risk when it is huge or tiny."""
    n = u.shape[-1]
    return torch.logsumexp(-u, dim=-1) - torch.log(torch.tensor(float(n), dtype=u.dtype))
