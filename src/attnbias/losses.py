"""Margin losses ℓ(u) of the prediction margin u = y·f, stable for |u| up to 1e6.

Each loss is a function of u with its derivative ℓ'(u) and log|ℓ'(u)| (for gradients kept in
log scale where ℓ'(u) itself underflows); `risk` averages over samples.
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


logistic = MarginLoss("logistic", _logistic, _logistic_grad, lambda u: -F.softplus(u))
exponential = MarginLoss("exponential", _exponential, _exponential_grad, lambda u: -u)
correlation = MarginLoss("correlation", _correlation, _correlation_grad, torch.zeros_like)

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


def log_exponential_risk(u: torch.Tensor) -> torch.Tensor:
    """log((1/n) Σ e^{-u_i}) without overflow: the exponential risk when it is huge or tiny."""
    n = u.shape[-1]
    return torch.logsumexp(-u, dim=-1) - torch.log(torch.tensor(float(n), dtype=u.dtype))
