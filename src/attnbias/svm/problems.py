"""The constraint matrices A of the two SVMs, and how to name and diagnose their rows.

Att-SVM: row (i, t) is vec((x_{i,α_i} − x_{i,t}) z_iᵀ), t ≠ α_i, and w = vec(W) (row-major).
Head SVM: row i is y_i x_{i,α_i}, and w = v.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validate import check_sequences
from .infeasible import InfeasibleSVMError, _zero_rows
from .results import AttSVMResult, HeadSVMResult, _fields
from .tokens import _numpy, _tokens


def _differences(X: np.ndarray, alpha: np.ndarray):
    """x_{i,α_i} − x_{i,t} for t ≠ α_i as (n, T−1, d), and the (sample, token) of each row."""
    n, T, _ = X.shape
    rows = np.arange(n)
    others = np.ones((n, T), dtype=bool)
    others[rows, alpha] = False
    diffs = (X[rows, alpha][:, None, :] - X)[others].reshape(n, T - 1, -1)
    return diffs, np.argwhere(others)


def _att_rows(diffs: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The dense A, (n(T−1), d²): row (i, t) is vec(diffs_{i,t} z_iᵀ)."""
    d = diffs.shape[2]
    return np.einsum("itj,ik->itjk", diffs, z).reshape(-1, d * d)


def _att_arrays(X, z, alpha):
    X, z, _, _, _ = check_sequences(X, z=z)
    X, z = _numpy(X), _numpy(z)
    return X, z, _tokens(alpha, X.shape[0], X.shape[1])


def constraint_matrix(X, z, alpha) -> np.ndarray:
    """Att-SVM constraint rows, (n(T−1), d²): row (i, t) is vec((x_{i,α_i} − x_{i,t}) z_iᵀ).

    Row-major vec, so a_kᵀ w = (x_{i,α_i} − x_{i,t})ᵀ W z_i with W = w.reshape(d, d); rows are
    ordered by sample, then token.
    """
    X, z, alpha = _att_arrays(X, z, alpha)
    diffs, _ = _differences(X, alpha)
    return _att_rows(diffs, z)


def _att_lifting(diffs: np.ndarray, z: np.ndarray):
    """Sparse factors A = B C through u_i = W z_i: B = blockdiag(diffs_i), C w = (W z_i)_i.

    The conic solvers factor a much sparser KKT system this way than with the dense A.
    """
    n, _, d = diffs.shape
    B = sp.block_diag(list(diffs), format="csr")
    i, j, k = np.meshgrid(np.arange(n), np.arange(d), np.arange(d), indexing="ij")
    C = sp.csr_matrix((z[i, k].ravel(), ((i * d + j).ravel(), (j * d + k).ravel())), (n * d, d * d))
    return B, C


class _AttProblem:
    """One Att-SVM instance: validated arrays, constraint rows and how to name them."""

    def __init__(self, X, z, alpha):
        self.X, self.z, self.alpha = _att_arrays(X, z, alpha)
        if self.X.shape[1] < 2:
            raise ValueError("X must have T >= 2 tokens: with one token there are no constraints")
        self.diffs, self.pairs = _differences(self.X, self.alpha)
        self.A = _att_rows(self.diffs, self.z)

    def name(self, k: int) -> str:
        i, t = self.pairs[k]
        return f"(sample {i}, token {t})"

    def check_zero_rows(self):
        """A zero constraint row has a reason that can be named: z_i = 0 or a duplicate token."""
        zero = _zero_rows(self.A)
        if not zero.size:
            return
        reasons = {}  # dict: ordered and one "z_i is zero" per sample
        for i, t in self.pairs[zero]:
            if not self.z[i].any():
                reasons[i, -1] = f"sample {i}: z_{i} is zero"
            else:
                reasons[i, t] = f"sample {i}: token {t} equals the selected token {self.alpha[i]}"
        raise InfeasibleSVMError(
            f"Att-SVM is infeasible: {'; '.join(list(reasons.values())[:5])}, "
            "so the margin is 0 for every W",
            zero,
        )

    def lifted(self):
        """Sparse factors for the conic solvers (ℓ1, nuclear, fallback), worth it for large A."""
        return _att_lifting(self.diffs, self.z) if self.A.size > 20_000 else None

    def result(self, norm_type, solution) -> AttSVMResult:
        d = self.X.shape[2]
        W = solution[0].reshape(d, d)
        return AttSVMResult(W=W, constraints=self.pairs, **_fields(self.A, norm_type, *solution))


class _HeadProblem:
    """One head-SVM instance: constraint k is sample k."""

    def __init__(self, X, y, alpha):
        X, _, y, _, _ = check_sequences(X, y=y)
        self.X, self.y = _numpy(X), _numpy(y)
        n, T, _ = self.X.shape
        self.alpha = _tokens(alpha, n, T)
        self.A = self.y[:, None] * self.X[np.arange(n), self.alpha]

    @staticmethod
    def name(k: int) -> str:
        return f"sample {k}"

    def check_zero_rows(self):
        zero = _zero_rows(self.A)
        if zero.size:
            samples = ", ".join(str(i) for i in zero[:5])
            raise InfeasibleSVMError(
                f"head SVM is infeasible: the selected token of sample(s) {samples} is zero, "
                "so the margin y_i vᵀx_(i,α_i) is 0 for every v",
                zero,
            )

    def result(self, norm_type, solution) -> HeadSVMResult:
        return HeadSVMResult(v=solution[0], **_fields(self.A, norm_type, *solution))
