"""The `Problem` every synthetic generator returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .._validate import check_sequences


@dataclass(frozen=True)
class Problem:
    """One attention-classification data set, float64.

    X (n, T, d) tokens, z (n, d) queries (for query="self", z = X[:, 0]), y (n,) labels ±1,
    v (d,) the fixed head (or the head's reference direction when it is trained),
    opt (n,) the optimal token of each sample when the generator fixes it by construction.
    """

    X: np.ndarray
    z: np.ndarray
    y: np.ndarray
    v: np.ndarray
    query: str = "cross"
    name: str = ""
    opt: np.ndarray | None = None
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.query not in ("cross", "self"):
            raise ValueError(f"query must be 'cross' or 'self', got {self.query!r}")
        check_sequences(self.X, self.z, self.y, self.v)
        if self.query == "self" and not np.array_equal(self.z, self.X[:, 0]):
            raise ValueError("query='self' needs z = X[:, 0] (the first token of each sample)")

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.X.shape

    def tensors(self, dtype=torch.float64, device=None):
        """(X, z, y, v) as torch tensors."""
        return tuple(
            torch.as_tensor(a, dtype=dtype, device=device) for a in (self.X, self.z, self.y, self.v)
        )
