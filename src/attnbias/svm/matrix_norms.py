"""The matrix norms of W = w.reshape(d, d) (row-major, D = d²) as the solvers use them: each
one's value from W's singular values, its objective in the conic program, the memory its
structured solve adds to the estimate (svm/memory.py), and that solve. A new matrix norm is one
entry of `MATRIX_NORM_SOLVERS` and its solver (norm_names.py names it, its dual and its meaning).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..defaults import FLOAT
from .sdp import solve_nuclear, solve_spectral


@dataclass(frozen=True)
class MatrixNormSolver:
    """name: as `metrics.parse_norm` returns it (a key of `norm_names.MATRIX_NORM_MEANINGS`).
    value: ‖W‖ from W's singular values. conic_objective: the cvxpy expression of ‖W‖ for a
    (d, d) cvxpy expression W. memory: bytes the structured solve adds, from (m, D, queries).
    solve: from (rank-one factors scaled to the unit rows, the ℓ2 solution's w or None) the
    structured solve returning (w, λ), or None where it cannot run."""

    name: str
    value: Callable[[np.ndarray], float]
    conic_objective: Callable
    memory: Callable[[int, int, int | None], int]
    solve: Callable[[tuple, np.ndarray | None], Callable | None]


def _nuclear_solve(rank_one, w_l2):
    return lambda: solve_nuclear(*rank_one)


def _spectral_solve(rank_one, w_l2):
    if w_l2 is None:
        return None
    return lambda: solve_spectral(*rank_one, w_l2)


def _nuclear_memory(m: int, D: int, queries: int | None) -> int:
    """The SDP's m × m Schur complement and the products forming it."""
    return 5 * FLOAT * m * m


def _spectral_memory(m: int, D: int, queries: int | None) -> int:
    """Its Schur complement and buffers, and a d³ block per distinct query."""
    return 4 * FLOAT * (D + 1) ** 2 + FLOAT * (queries or m) * math.isqrt(D) ** 3


def _nuclear_objective(W):
    import cvxpy as cp

    return cp.normNuc(W)


def _spectral_objective(W):
    import cvxpy as cp

    return cp.sigma_max(W)


MATRIX_NORM_SOLVERS = {
    "nuc": MatrixNormSolver(
        "nuc",
        lambda singular: float(singular.sum()),
        _nuclear_objective,
        _nuclear_memory,
        _nuclear_solve,
    ),
    "spectral": MatrixNormSolver(
        "spectral",
        lambda singular: float(singular.max()),
        _spectral_objective,
        _spectral_memory,
        _spectral_solve,
    ),
}
