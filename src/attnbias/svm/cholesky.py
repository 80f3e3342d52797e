"""The Cholesky factor and solve that the interior-point solvers (ℓ2's active set, ℓp's path
following, the nuclear and spectral norms' SDP) call thousands of times on matrices of tens of
rows: scipy's LAPACK calls, without the checks of its wrappers that cost more than the
arithmetic at that size (the same bits as `scipy.linalg.cho_factor` and `cho_solve`)."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla


def gram(A: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """A diag(weights) Aᵀ, upper triangle only (BLAS syrk: half the work of A @ A.T)."""
    if weights is not None:
        A = A * np.sqrt(weights)
    return sla.blas.dsyrk(1.0, A)


def cholesky(K: np.ndarray):
    """K's upper Cholesky factor, as `sla.cho_factor(K, check_finite=False)` gives it (the same
    LAPACK potrf call, without its wrapper's checks: a solver calls this thousands of times on
    matrices of tens of rows); reads the upper triangle. LinAlgError if K is not positive
    definite."""
    factor, info = sla.lapack.dpotrf(K, lower=0, clean=0)
    if info > 0:
        raise np.linalg.LinAlgError(
            f"{info}-th leading minor of the array is not positive definite"
        )
    if info < 0:
        raise ValueError(f"LAPACK potrf: illegal value in argument {-info}")
    return factor, False


def solve_factored(factor, b: np.ndarray) -> np.ndarray:
    """x with K x = b from `cholesky(K)`, as `sla.cho_solve(factor, b)` gives it (the same
    LAPACK potrs call, and its check: ValueError where the factor or b is not finite)."""
    c, lower = factor
    if not (np.isfinite(c).all() and np.isfinite(b).all()):
        raise ValueError("array must not contain infs or NaNs")
    x, info = sla.lapack.dpotrs(c, b, lower=int(lower))
    if info != 0:
        raise ValueError(f"LAPACK potrs: illegal value in argument {-info}")
    return x
