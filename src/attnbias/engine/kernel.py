"""Risk and closed-form gradients of R stacked runs, arranged for many tiny problems.

The maths is `model.risk_and_gradients` (tests hold the two equal to 1e-12); only the order of
work differs, because a sweep's cost is the per-step overhead of small batched products:
- logits a_{i,t} = x_{i,t}ᵀ (W z_i): one R-batched product for the W z_i, one batched over
  R·n samples for their products with the tokens;
- ∂L/∂W = Σ_i (Σ_t r_{i,t} x_{i,t}) z_iᵀ: the inner sums batched over R·n, the outer one
  R-batched;
- the softmax over T ≈ 8 tokens is written out (torch's kernel is slow for short rows);
- with a fixed head, the token values h = X v are computed once.
The saturated-attention cancellation is avoided as in the model (`centered_scores`); gradients are
formed in log scale (`scaled_gradients`), so their direction survives where their size underflows.
"""

from __future__ import annotations

import math

import torch

from ..losses import (
    get_loss,
    log_optimal_token_excess,
    log_risk,
    margins_ordered,
    optimal_token_excess,
)
from ..model import centered_scores
from ..norms import per_run


class Stack:
    """The data of R runs: X (R, n, T, d), z (R, n, d), y (R, n), head v (R, d) if fixed.

    opt (R, n), excess (R,) bool: with a fixed head, the runs whose risk is reported as its
    excess L − L* over the loss with all attention on the optimal tokens `opt`, computed
    scale-safely (`losses.optimal_token_excess`; Polyak's step with L* "optimal"); None: none."""

    def __init__(self, X, z, y, loss: str, v=None, opt=None, excess=None):
        self.R, self.n, self.T, self.d = X.shape
        self.X, self.z, self.y, self.v = X, z, y, v
        self.opt, self.excess = (
            (opt, excess) if excess is not None and bool(excess.any()) else (None, None)
        )
        if self.excess is not None and v is None:
            raise ValueError("the excess over the optimal tokens needs a fixed head")
        self.loss = get_loss(loss)
        self.y_n = y / self.n  # ℓ'(u) y / n is each sample's weight in the gradient
        self.Xf = X.reshape(self.R, self.n * self.T, self.d)
        self.XfT = self.Xf.mT.contiguous()
        self.h = None if v is None else self.values(v)
        # the excess runs whose log(L − L*) is taken in the log domain (their optimal tokens
        # have the largest margins: `losses.log_optimal_token_excess`); None: all of them
        self.log_domain = None
        if self.excess is not None:
            ordered = margins_ordered(y.unsqueeze(-1) * self.h, self.opt)
            self.log_domain = None if bool(ordered.all()) else ordered

    def take(self, rows: torch.Tensor) -> Stack:
        v = None if self.v is None else self.v[rows]
        opt, excess = (None, None) if self.excess is None else (self.opt[rows], self.excess[rows])
        return Stack(self.X[rows], self.z[rows], self.y[rows], self.loss, v, opt, excess)

    def risk(self, u: torch.Tensor, s: torch.Tensor, yh: torch.Tensor) -> torch.Tensor:
        """(R,) each run's risk from its margins u (R, n), or for the `excess` runs L − L*
        from the scores s and the tokens' margins yh = y·h (R, n, T)."""
        value = self.loss.value(u).mean(-1)
        if self.excess is None:
            return value
        return torch.where(self.excess, optimal_token_excess(s, yh, self.opt, self.loss), value)

    def log_risk(
        self, risk: torch.Tensor, log_s: torch.Tensor, yh: torch.Tensor, u: torch.Tensor
    ) -> torch.Tensor | None:
        """(R,) the log of each run's `risk`; for the `excess` runs log(L − L*) from the
        scores' logs log_s (R, n, T), finite where L − L* underflows
        (`losses.log_optimal_token_excess`; where a token's margin exceeds the optimal one's:
        the log of the risk); with a trained head, whose L* is 0, log L from the margins u
        (R, n), finite where L underflows (`losses.log_risk`). None otherwise (nothing to add
        to the risk itself)."""
        if self.excess is None:
            trained = self.v is None and self.loss.log_value is not None
            return log_risk(u, self.loss) if trained else None
        direct = risk.clamp(min=0.0).log()
        exact = log_optimal_token_excess(log_s, yh, self.opt, self.loss)
        keep = self.excess if self.log_domain is None else self.excess & self.log_domain
        return torch.where(keep, exact, direct)

    def values(self, v: torch.Tensor) -> torch.Tensor:
        """h_{i,t} = vᵀ x_{i,t}, (R, n, T)."""
        return torch.bmm(self.Xf, v.unsqueeze(-1)).view(self.R, self.n, self.T)

    def risk_and_gradients(self, W: torch.Tensor, v: torch.Tensor | None = None, risk=True):
        """(L (R,) or None if not `risk`, ∂L/∂W (R, d, d), ∂L/∂v (R, d) or None when the head
        is fixed), in true scale (entries may underflow: see `scaled_gradients`)."""
        loss, grads, log_scales, _ = self.scaled_gradients(W, v, risk)
        true = [g * per_run(torch.exp(m), g) for g, m in zip(grads, log_scales)]
        return loss, true[0], true[1] if v is not None else None

    def scaled_gradients(self, W: torch.Tensor, v: torch.Tensor | None = None, risk=True):
        """(L or None, [G̃_W, G̃_v], [m_W, m_v], log(L − L*) or None) with ∂L/∂W = exp(m_W)·G̃_W,
        ∂L/∂v = exp(m_v)·G̃_v per run, and each G̃ of order one (v's only when the head is
        trained), and `log_risk` (None without `risk`).

        Late in a run the gradient is far below the float64 range (its terms are c_i s_{i,t}
        with scores s_{i,t} = e^{−margin}), but its direction, which is all a normalised step
        uses, is not: the terms are formed in log scale, log|c_i| + log s_{i,t}, shifted by
        their largest value m before exponentiating."""
        R, n, T = self.R, self.n, self.T
        h = self.h if v is None else self.values(v)
        Wz = torch.bmm(self.z, W.mT)  # row i: (W z_i)ᵀ
        a = torch.matmul(self.X, Wz.unsqueeze(-1)).squeeze(-1)  # a_{i,t} = x_{i,t}ᵀ W z_i
        shifted = a - a.amax(-1, keepdim=True)
        e = torch.exp(shifted)
        total = e.sum(-1, keepdim=True)
        s = e / total
        f = (s * h).sum(-1)
        u = self.y * f
        # log|c_i s_{i,t}| with c_i = ℓ'(u_i) y_i / n the sample's weight; ℓ' < 0, so the
        # sign of c_i is −y_i.
        log_weight = self.loss.log_abs_derivative(u) - math.log(n)
        log_terms = shifted - torch.log(total) + log_weight.unsqueeze(-1)
        sign = -self.y.unsqueeze(-1)
        top = s.argmax(-1, keepdim=True)
        others = log_terms.scatter(-1, top, -math.inf)  # the top token's term is −Σ others
        m_W = finite_max(others)
        r = sign * centered_scores(torch.exp(others - per_run(m_W, others)), h, f, top)
        xr = torch.matmul(r.unsqueeze(-2), self.X).squeeze(-2)  # Σ_t r_{i,t} x_{i,t}
        grads, log_scales = [torch.bmm(xr.mT, self.z)], [m_W]
        if v is not None:
            m_v = finite_max(log_terms)
            weights = sign * torch.exp(log_terms - per_run(m_v, log_terms))
            grads.append(torch.bmm(self.XfT, weights.view(R, n * T, 1)).squeeze(-1))
            log_scales.append(m_v)
        if not risk:
            return None, grads, log_scales, None
        yh = self.y.unsqueeze(-1) * h
        value = self.risk(u, s, yh)
        log_s = shifted - torch.log(total)
        return value, grads, log_scales, self.log_risk(value, log_s, yh, u)


def finite_max(log_terms: torch.Tensor) -> torch.Tensor:
    """The largest entry per run, 0 where there is none (a run without such terms has a zero
    gradient, whatever its scale)."""
    return log_terms.amax(dim=(1, 2)).nan_to_num_(0.0, 0.0, 0.0)
