"""How much memory a solve needs, estimated up front from the problem's size, and the limit.

A solve holds the m × D constraint matrix A (Att-SVM: m = n(T−1) rows, D = d² entries each) in
float64 and, whatever the norm, first runs the ℓ2 solve. The estimate (bytes) adds up the
largest arrays of each stage, each rounded up to a whole number of copies:

    every norm   6 · 8mD  (A, its unit-scale copy, the ℓ2 solvers' copies)
                 + 3 · 8 min(m, D)²  (the Gram matrix, its submatrix and Cholesky factor)
    1 < p < ∞    + 2 · 8mD + 3 · 8 min(m, D)²  (the interior point's scaled A and Newton system)
    ℓ1, ℓ∞       + 30 · 8mD  (HiGHS's sparse copies of A and its factorisation)
    nuclear      + 5 · 8m²  (the SDP's m × m Schur complement and the products forming it)
    spectral     + 4 · 8(D + 1)² + 8 q d³  (its Schur complement and buffers; q distinct queries)

Measured peaks stay below it (n = 2000, T = 3, d = 6, nuclear: 540 MB measured, 647 MB
estimated). Clarabel, the fallback when no in-house answer passes the KKT check (and the solver
of the matrix norms of a plain A), can need more.
"""

from __future__ import annotations

import math

import numpy as np

from ..defaults import DEFAULT_MAX_MEMORY_GB as DEFAULT_MAX_MEMORY_GB  # svm's name for it
from ..defaults import FLOAT
from .matrix_norms import MATRIX_NORM_SOLVERS
from .norms import MATRIX_NORMS

GB = 10**9


def solver_memory(m: int, D: int, norm_type, queries: int | None = None) -> int:
    """Estimated peak bytes of one max-margin solve of m constraints with D entries each
    (norm_type as parse_norm returns it; queries: the Att-SVM's distinct z_i, at most n)."""
    dense, square = FLOAT * m * D, FLOAT * min(m, D) ** 2
    total = 6 * dense + 3 * square
    if norm_type in MATRIX_NORM_SOLVERS:
        total += MATRIX_NORM_SOLVERS[norm_type].memory(m, D, queries)
    elif norm_type in (1.0, np.inf):
        total += 30 * dense
    elif norm_type not in (2.0, *MATRIX_NORMS):
        total += 2 * dense + 3 * square
    return int(total)


def check_limit(max_memory_gb) -> float | None:
    """max_memory_gb validated: a positive number of GB (10⁹ bytes), or None for no limit."""
    if max_memory_gb is None:
        return None
    if isinstance(max_memory_gb, bool) or not isinstance(max_memory_gb, (int, float)):
        raise TypeError(
            f"max_memory_gb must be a number of GB or None, got {type(max_memory_gb).__name__}"
        )
    if not (math.isfinite(max_memory_gb) and max_memory_gb > 0):
        raise ValueError(f"max_memory_gb must be a positive number of GB, got {max_memory_gb}")
    return float(max_memory_gb)


def check_memory(estimate: int, max_memory_gb, what: str) -> None:
    """ValueError if `estimate` bytes exceed max_memory_gb (None: no limit); `what` describes
    the problem in the message."""
    limit = check_limit(max_memory_gb)
    if limit is not None and estimate > limit * GB:
        raise ValueError(
            f"{what} needs about {estimate / GB:.3g} GB of memory (estimate), more than the "
            f"limit of {limit:g} GB; if the machine has it, raise the limit: max_memory_gb= "
            "(on the command line: --max-memory-gb)"
        )
