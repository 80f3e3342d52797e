"""Risk and closed-form gradients of R stacked runs, arranged for many tiny problems.

The maths is `model.risk_and_gradients` (tests hold the two equal to 1e-12); only the order of
work differs, because a sweep's cost is the per-step overhead of small batched products:
- logits a_{i,t} = x_{i,t}ᵀ (W z_i): one R-batched product for the W z_i, one batched over
  R·n samples for their products with the tokens;
- ∂L/∂W = Σ_i (Σ_t r_{i,t} x_{i,t}) z_iᵀ: the inner sums batched over R·n, the outer one
  R-batched;
- the softmax over T ≈ 8 tokens is written out (torch's kernel is slow for short rows);
- with a fixed head, the token values h = X v are computed once.
The saturated-attention cancellation is avoided as in the model (`_centered_scores`).
"""

from __future__ import annotations

import torch

from ..losses import get_loss
from ..model import _centered_scores


class Stack:
    """The data of R runs: X (R, n, T, d), z (R, n, d), y (R, n), head v (R, d) if fixed."""

    def __init__(self, X, z, y, loss: str, v=None):
        self.R, self.n, self.T, self.d = X.shape
        self.X, self.z, self.y, self.v = X, z, y, v
        self.loss = get_loss(loss)
        self.y_n = y / self.n  # ℓ'(u) y / n is each sample's weight in the gradient
        self.Xf = X.reshape(self.R, self.n * self.T, self.d)
        self.XfT = self.Xf.mT.contiguous()
        self.h = None if v is None else self.values(v)

    def take(self, rows: torch.Tensor) -> Stack:
        v = None if self.v is None else self.v[rows]
        return Stack(self.X[rows], self.z[rows], self.y[rows], self.loss, v)

    def values(self, v: torch.Tensor) -> torch.Tensor:
        """h_{i,t} = vᵀ x_{i,t}, (R, n, T)."""
        return torch.bmm(self.Xf, v.unsqueeze(-1)).view(self.R, self.n, self.T)

    def risk_and_gradients(self, W: torch.Tensor, v: torch.Tensor | None = None, risk=True):
        """(L (R,) or None if not `risk`, ∂L/∂W (R, d, d), ∂L/∂v (R, d) or None when the head
        is fixed)."""
        R, n, T = self.R, self.n, self.T
        h = self.h if v is None else self.values(v)
        Wz = torch.bmm(self.z, W.mT)  # row i: (W z_i)ᵀ
        a = torch.matmul(self.X, Wz.unsqueeze(-1)).squeeze(-1)  # a_{i,t} = x_{i,t}ᵀ W z_i
        e = torch.exp(a - a.amax(-1, keepdim=True))
        s = e / e.sum(-1, keepdim=True)
        f = (s * h).sum(-1)
        u = self.y * f
        c = self.loss.derivative(u) * self.y_n
        r = c.unsqueeze(-1) * _centered_scores(s, h, f)
        xr = torch.matmul(r.unsqueeze(-2), self.X).squeeze(-2)  # Σ_t r_{i,t} x_{i,t}
        grad_W = torch.bmm(xr.mT, self.z)
        grad_v = None
        if v is not None:
            grad_v = torch.bmm(self.XfT, (c.unsqueeze(-1) * s).view(R, n * T, 1)).squeeze(-1)
        return self.loss.value(u).mean(-1) if risk else None, grad_W, grad_v
