"""Margin losses ℓ(u) of the prediction margin u = y·f, stable for |u| up to 1e6.

Each loss is a function of u with its derivative ℓ'(u) and log|ℓ'(u)| (for gradients kept in
log scale where ℓ'(u) itself underflows), and its excess ℓ(u* + δ) − ℓ(u*) from δ itself;
`risk` averages over samples, `optimal_token_excess` is L − L* over the optimal tokens.
"""

from __future__ import annotations

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


logistic = MarginLoss(
    "logistic", _logistic, _logistic_grad, lambda u: -F.softplus(u), _logistic_excess
)
exponential = MarginLoss(
    "exponential", _exponential, _exponential_grad, lambda u: -u, _exponential_excess
)
correlation = MarginLoss(
    "correlation", _correlation, _correlation_grad, torch.zeros_like, _correlation_excess
)

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


def log_exponential_risk(u: torch.Tensor) -> torch.Tensor:
    """log((1/n) Σ e^{-u_i}) without overflow: the exponential risk when it is huge or tiny."""
    n = u.shape[-1]
    return torch.logsumexp(-u, dim=-1) - torch.log(torch.tensor(float(n), dtype=u.dtype))
