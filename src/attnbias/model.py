"""One softmax-attention layer with a linear head (docs/theory.md#model).

    a_{i,t} = x_{i,t}ᵀ W z_i,   s_i = softmax(a_i),   f_i = vᵀ X_iᵀ s_i.

The functional forms accept leading batch dimensions on every argument (W (..., d, d),
X (..., n, T, d), z (..., n, d), v (..., d)) so the engine can run many problems as one program.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ._validate import check_sequences
from .losses import MarginLoss, get_loss


def attention_logits(W: torch.Tensor, X: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """a_{i,t} = x_{i,t}ᵀ W z_i, shape (..., n, T)."""
    Wz = torch.einsum("...de,...ne->...nd", W, z)
    return torch.einsum("...ntd,...nd->...nt", X, Wz)


def attention_scores(W: torch.Tensor, X: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """s_i = softmax(a_i) over tokens, shape (..., n, T)."""
    return torch.softmax(attention_logits(W, X, z), dim=-1)


def token_values(X: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """vᵀ x_{i,t}, shape (..., n, T)."""
    return torch.einsum("...ntd,...d->...nt", X, v)


def centered_scores(
    s: torch.Tensor, h: torch.Tensor, f: torch.Tensor, top: torch.Tensor | None = None
) -> torch.Tensor:
    """∂f/∂a_t = s_t (h_t − f), computed without cancellation (`top`: the index of the largest
    score, if s is not the scores themselves but a rescaled copy).

    Once attention saturates, s_max ≈ 1 and h_max − f is a difference of nearly equal numbers:
    evaluated directly it is rounding noise (below ~1e-16 relative), which silently bends the
    gradient's direction in long normalized runs. The entries sum to zero exactly, so the
    largest-score entry is taken as minus the sum of the others, each of which is accurate.
    """
    r = s * (h - f.unsqueeze(-1))
    top = s.argmax(-1, keepdim=True) if top is None else top
    r = r.scatter(-1, top, torch.zeros_like(top, dtype=r.dtype))
    return r.scatter(-1, top, -r.sum(-1, keepdim=True))


class _AttentionPool(torch.autograd.Function):
    """f = Σ_t softmax(a)_t h_t with the cancellation-free backward of `centered_scores`."""

    @staticmethod
    def forward(ctx, a, h):
        s = torch.softmax(a, dim=-1)
        f = (s * h).sum(-1)
        ctx.save_for_backward(s, h, f)
        return f

    @staticmethod
    def backward(ctx, grad_f):
        s, h, f = ctx.saved_tensors
        g = grad_f.unsqueeze(-1)
        return g * centered_scores(s, h, f), g * s


def attention_pool(a: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Σ_t softmax(a)_t h_t over the last dimension, with a numerically stable gradient."""
    return _AttentionPool.apply(a, h)


def predict(W: torch.Tensor, v: torch.Tensor, X: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """f_i = Σ_t s_{i,t} vᵀ x_{i,t}, shape (..., n)."""
    return attention_pool(attention_logits(W, X, z), token_values(X, v))


def risk_and_gradients(
    W: torch.Tensor,
    v: torch.Tensor,
    X: torch.Tensor,
    z: torch.Tensor,
    y: torch.Tensor,
    loss: str | MarginLoss = "logistic",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Risk L and the closed-form gradients ∂L/∂W and ∂L/∂v (no autograd).

    ∂L/∂W = (1/n) Σ_i ℓ'(y_i f_i) y_i X_iᵀ (s_i ⊙ (X_i v − f_i)) z_iᵀ
    ∂L/∂v = (1/n) Σ_i ℓ'(y_i f_i) y_i X_iᵀ s_i
    """
    loss = get_loss(loss)
    s = attention_scores(W, X, z)
    h = token_values(X, v)
    f = (s * h).sum(-1)
    u = y * f
    n = X.shape[-3]
    c = loss.derivative(u) * y / n  # (..., n)
    r = c.unsqueeze(-1) * centered_scores(s, h, f)  # (..., n, T)
    grad_W = torch.einsum("...nt,...ntd,...ne->...de", r, X, z)
    grad_v = torch.einsum("...nt,...ntd->...d", c.unsqueeze(-1) * s, X)
    return loss.value(u).mean(-1), grad_W, grad_v


def attention_gradient(W, v, X, z, y, loss="logistic") -> torch.Tensor:
    """Closed-form ∂L/∂W for one problem; validates its input (see `risk_and_gradients`)."""
    X, z, y, v, W = check_sequences(X, z, y, v, W)
    return risk_and_gradients(W, v, X, z, y, loss)[1]


class AttentionClassifier(nn.Module):
    """f(X) = vᵀ Xᵀ softmax(X W z) with W (d×d) or W = K Qᵀ (K, Q ∈ R^{d×m}).

    query="cross" takes z as an input; query="self" uses the first token, z_i = x_{i,1}.
    The head v is a buffer (fixed) unless train_head=True.

    dtype: of the parameters and the head. None (the default) follows the input: the dtype of
    `v` where v is a floating tensor or array (the synthetic problems' v is float64, so their
    models are), else torch.get_default_dtype(). The inputs of forward() must have the
    model's dtype (TypeError naming it otherwise: nothing is cast silently).
    """

    def __init__(
        self,
        d: int,
        parameterization: str = "W",
        query: str = "cross",
        train_head: bool = False,
        m: int | None = None,
        v: torch.Tensor | None = None,
        init_scale: float = 0.0,
        generator: torch.Generator | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__()
        if not isinstance(d, int) or d < 1:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        dtype = model_dtype(dtype, v)
        if parameterization not in ("W", "KQ"):
            raise ValueError(f"parameterization must be 'W' or 'KQ', got {parameterization!r}")
        if query not in ("cross", "self"):
            raise ValueError(f"query must be 'cross' or 'self', got {query!r}")
        self.d, self.parameterization, self.query = d, parameterization, query

        def init(*shape):
            return init_scale * torch.randn(*shape, generator=generator, dtype=dtype)

        if parameterization == "W":
            self.W = nn.Parameter(init(d, d))
        else:
            m = d if m is None else m
            self.K = nn.Parameter(init(d, m))
            self.Q = nn.Parameter(init(d, m))
        head = torch.zeros(d, dtype=dtype) if v is None else torch.as_tensor(v, dtype=dtype).clone()
        if tuple(head.shape) != (d,):
            raise ValueError(f"v must have shape (d,) = ({d},), got {tuple(head.shape)}")
        if train_head:
            self.v = nn.Parameter(head)
        else:
            self.register_buffer("v", head)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the parameters and the head (what forward's inputs must have)."""
        return self.v.dtype

    def extra_repr(self) -> str:
        if self.parameterization == "W":
            attention = f"W: {self.d}×{self.d}"
        else:
            attention = f"K, Q: {self.d}×{self.K.shape[1]} each (W = K Qᵀ)"
        head = "trained" if isinstance(self.v, nn.Parameter) else "fixed"
        dtype = str(self.dtype).removeprefix("torch.")
        return f"d={self.d}, {attention}, query={self.query!r}, head v: {head}, dtype={dtype}"

    def check_input(self, t: torch.Tensor, name: str) -> None:
        """A clear TypeError for an input of another dtype than the model's (torch's own is
        "expected scalar type Double")."""
        if isinstance(t, torch.Tensor) and t.dtype != self.dtype:
            mine, theirs = (str(x).removeprefix("torch.") for x in (self.dtype, t.dtype))
            raise TypeError(
                f"AttentionClassifier: {name} is {theirs} but the model is {mine}; build the "
                f"model with dtype=torch.{theirs} (or call model.to(torch.{theirs})), or cast "
                f"{name}"
            )

    def attention_matrix(self) -> torch.Tensor:
        """The key-query matrix W, shape (d, d): the parameter W itself, or the product K Qᵀ
        (differentiable in K and Q)."""
        return self.W if self.parameterization == "W" else self.K @ self.Q.T

    def query_of(self, X: torch.Tensor, z: torch.Tensor | None) -> torch.Tensor:
        """The queries, shape (..., n, d): `z` for query="cross" (ValueError if None), the
        first tokens X[..., 0, :] for query="self" (`z` ignored)."""
        if self.query == "self":
            return X[..., 0, :]
        if z is None:
            raise ValueError("z is required for query='cross'; pass the queries (n, d)")
        return z

    def scores(self, X: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        """The attention scores s_i = softmax(X_i W z_i), shape (..., n, T), each row summing
        to 1, for tokens X (..., n, T, d) and queries z (..., n, d) (None for query="self");
        TypeError for an input of another dtype than the model's."""
        self.check_input(X, "X")
        self.check_input(z, "z")
        return attention_scores(self.attention_matrix(), X, self.query_of(X, z))

    def forward(self, X: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        """The outputs f_i = Σ_t s_{i,t} vᵀx_{i,t}, shape (..., n), for tokens X (..., n, T, d)
        and queries z (..., n, d) (None for query="self"); the margins are y * model(X, z).
        TypeError for an input of another dtype than the model's."""
        self.check_input(X, "X")
        self.check_input(z, "z")
        return predict(self.attention_matrix(), self.v, X, self.query_of(X, z))


def model_dtype(dtype, v) -> torch.dtype:
    """The dtype an AttentionClassifier is built in: `dtype`, or where it is None, that of a
    floating `v` (tensor or array), else torch's default."""
    if dtype is None:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return v.dtype
        given = getattr(v, "dtype", None)  # a NumPy array
        if given is not None and getattr(given, "kind", "") == "f":
            return torch.from_numpy(np.zeros(0, dtype=given)).dtype
        return torch.get_default_dtype()
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point or dtype.is_complex:
        raise TypeError(f"dtype must be a real floating torch.dtype or None, got {dtype!r}")
    return dtype
