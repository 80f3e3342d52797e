"""The constraint matrices A of the two SVMs (and of max_margin's plain A), how to name and
diagnose their rows, and how an instance is solved into its result.

Att-SVM: row (i, t) is vec((x_{i,α_i} − x_{i,t}) z_iᵀ), t ≠ α_i, and w = vec(W) (row-major).
Head SVM: row i is y_i x_{i,α_i}, and w = v.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validate import check_sequences
from .infeasible import InfeasibleSVMError, SVMSolveError, relative_row_lengths
from .memory import check_memory, solver_memory
from .results import AttSVMResult, HeadSVMResult, MaxMarginResult, result_fields, unsolved_fields
from .solver import solve_max_margin
from .tokens import to_numpy, token_indices


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
    X, z = to_numpy(X), to_numpy(z)
    return X, z, token_indices(alpha, X.shape[0], X.shape[1])


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


def check_size(
    m: int, D: int, norm_type, max_memory_gb, queries: int | None = None, instances: int = 1
) -> None:
    """ValueError if solving `instances` problems of m constraints with D entries (one at a
    time, their constraint matrices all held) needs more than max_memory_gb (memory.py)."""
    estimate = solver_memory(m, D, norm_type, queries) + (instances - 1) * 8 * m * D
    many = f"{instances} max-margin problems" if instances > 1 else "the max-margin problem"
    check_memory(estimate, max_memory_gb, f"{many} (norm {norm_type}, {m} constraints × {D})")


class _Rows:
    """What the problems share: A, a `title` for errors, how to name and describe row k, and the
    solve into a result (subclasses build it in `_result`)."""

    A: np.ndarray
    title: str

    def lifted(self):
        return None

    def rank_one(self):
        return None

    def solve(self, norm_type, conic=None):
        """The verified result; raises InfeasibleSVMError or SVMSolveError."""
        solved = solve_max_margin(self.A, norm_type, self, self.lifted(), conic, self.rank_one())
        return self._result(solved.w, result_fields(self.A, norm_type, solved))

    def outcome(self, norm_type, conic=None):
        """The result, or for an instance without a solution one with its status and error."""
        try:
            return self.solve(norm_type, conic)
        except (InfeasibleSVMError, SVMSolveError) as err:
            return self._result(None, unsolved_fields(norm_type, err))

    def _result(self, w, fields):
        raise NotImplementedError


class MatrixProblem(_Rows):
    """max_margin's plain A: constraint k is row k."""

    title = "the max-margin problem is infeasible"

    def __init__(self, A: np.ndarray):
        self.A = A
        self.lengths = relative_row_lengths(A)

    @staticmethod
    def name(k: int) -> str:
        return f"constraint {k}"

    def describe(self, k: int) -> str:
        if self.lengths[k] == 0:
            return f"the constraint vector of constraint {k} is zero"
        return f"constraint {k}'s vector is {self.lengths[k]:.2g} of the longest one"

    def _result(self, w, fields):
        return MaxMarginResult(w=w, **fields)


class AttProblem(_Rows):
    """One Att-SVM instance: validated arrays, constraint rows and how to name them."""

    title = "Att-SVM is infeasible"

    def __init__(self, X, z, alpha, norm_type=None, max_memory_gb=None, instances=1):
        """With norm_type, the memory the solve needs is checked (check_size) before the
        constraint matrix is built."""
        self.X, self.z, self.alpha = _att_arrays(X, z, alpha)
        n, T, d = self.X.shape
        if T < 2:
            raise ValueError("X must have T >= 2 tokens: with one token there are no constraints")
        if norm_type is not None:
            check_size(n * (T - 1), d * d, norm_type, max_memory_gb, n, instances)
        self.diffs, self.pairs = _differences(self.X, self.alpha)
        self.A = _att_rows(self.diffs, self.z)

    def name(self, k: int) -> str:
        i, t = self.pairs[k]
        return f"(sample {i}, token {t})"

    def describe(self, k: int) -> str:
        """Why row k is short: x_{i,t} = x_{i,α_i} or z_i = 0 exactly, else how close they are."""
        i, t = self.pairs[k]
        a = self.alpha[i]
        gap = np.linalg.norm(self.diffs.reshape(len(self.A), -1)[k])
        query = np.linalg.norm(self.z[i])
        if gap == 0:
            return f"sample {i}: token {t} equals the selected token {a}"
        if query == 0:
            return f"sample {i}: z_{i} is zero"
        tokens = np.linalg.norm(self.X, axis=2).max()
        queries = np.linalg.norm(self.z, axis=1).max()
        return (
            f"sample {i}: token {t} is {gap / tokens:.2g} from the selected token {a} and "
            f"‖z_{i}‖ is {query / queries:.2g} (relative to the longest token and query)"
        )

    def lifted(self):
        """Sparse factors for the conic solvers (ℓ1, nuclear, fallback), worth it for large A."""
        return _att_lifting(self.diffs, self.z) if self.A.size > 20_000 else None

    def rank_one(self):
        """(U, V) with row k of A = vec(u_k v_kᵀ): u = x_{i,α_i} − x_{i,t}, v = z_i."""
        return self.diffs.reshape(len(self.A), -1), self.z[self.pairs[:, 0]]

    def _result(self, w, fields):
        W = None if w is None else w.reshape(self.X.shape[2], -1)
        return AttSVMResult(W=W, constraints=self.pairs, **fields)


class HeadProblem(_Rows):
    """One head-SVM instance: constraint k is sample k."""

    title = "head SVM is infeasible"

    def __init__(self, X, y, alpha):
        X, _, y, _, _ = check_sequences(X, y=y)
        self.X, self.y = to_numpy(X), to_numpy(y)
        n, T, _ = self.X.shape
        self.alpha = token_indices(alpha, n, T)
        self.A = self.y[:, None] * self.X[np.arange(n), self.alpha]

    @staticmethod
    def name(k: int) -> str:
        return f"sample {k}"

    def describe(self, k: int) -> str:
        length = np.linalg.norm(self.A[k])
        if length == 0:
            return f"the selected token of sample {k} is zero"
        longest = np.linalg.norm(self.X, axis=2).max()
        return f"the selected token of sample {k} is {length / longest:.2g} of the longest token"

    def _result(self, w, fields):
        return HeadSVMResult(v=w, **fields)
