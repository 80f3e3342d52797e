"""The Gram matrix, Cholesky factor and solve that the solvers (ℓ2's active set, ℓp's path
following, the nuclear and spectral norms' SDP) call thousands of times on float64 matrices of
tens of rows: scipy's BLAS and LAPACK calls, without the wrappers of `scipy.linalg.cho_factor`
and `cho_solve`, whose checks cost more than the arithmetic at that size (the same bits)."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla


def gram(A: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """A diag(weights) Aᵀ, upper triangle only (BLAS syrk: half the work of A @ A.T)."""
    if weights is not None:
        A = A * np.sqrt(weights)
    return sla.blas.dsyrk(1.0, A)


def cholesky(K: np.ndarray):
    """The upper Cholesky factor of a float64 K (n × n, n ≥ 1; its upper triangle is read, K
    is not changed), as `sla.cho_factor(K, check_finite=False)` gives it: the same LAPACK potrf
    call. LinAlgError if K is not positive definite, ValueError if it is not square."""
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise ValueError(f"cholesky needs a non-empty square matrix, got shape {K.shape}")
    factor, info = sla.lapack.dpotrf(K, lower=0, clean=0)
    if info > 0:
        raise np.linalg.LinAlgError(
            f"{info}-th leading minor of the array is not positive definite"
        )
    if info < 0:
        raise ValueError(f"LAPACK potrf: illegal value in argument {-info}")
    return factor, False


def solve_factored(factor, b: np.ndarray) -> np.ndarray:
    """x with K x = b (b float64, n or n × k) from `cholesky(K)`, as `sla.cho_solve(factor, b)`
    gives it: the same LAPACK potrs call, and its checks (ValueError where the factor or b is
    not finite, or their sizes differ)."""
    c, lower = factor
    if b.ndim not in (1, 2) or b.shape[0] != c.shape[0]:
        raise ValueError(f"incompatible dimensions ({c.shape} and {b.shape})")
    if not (np.isfinite(c).all() and np.isfinite(b).all()):
        raise ValueError("array must not contain infs or NaNs")
    x, info = sla.lapack.dpotrs(c, b, lower=int(lower))
    if info != 0:
        raise ValueError(f"LAPACK potrs: illegal value in argument {-info}")
    return x
