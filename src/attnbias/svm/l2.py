"""The ℓ2 solver: primal-dual active set on the Gram matrix, non-negative least squares as
fallback; both exact. It also decides feasibility for every norm."""

from __future__ import annotations

import functools

import numpy as np
from scipy.optimize import nnls

from .cholesky import cholesky, gram, solve_factored
from .infeasible import NUMERICAL_LIMIT, diagnose_infeasible


def _active_set_l2(A: np.ndarray, max_iter: int = 50):
    """min ½‖w‖² s.t. Aw ≥ 1 by primal-dual active set on the dual QP (Hintermüller et al.).

    On the support S: (A_S A_Sᵀ) λ_S = 1; S is then updated to {λ > 0} ∪ {margin < 1}. Returns
    (w, λ) with w = Aᵀλ, or None (singular Gram block, cycling) so the caller can fall back.
    """
    m = A.shape[0]
    K = gram(A)
    support = np.ones(m, dtype=bool)
    seen = set()
    for _ in range(max_iter):
        if not support.any():
            return None
        lam = np.zeros(m)
        try:
            factor = cholesky(K[np.ix_(support, support)])
        except np.linalg.LinAlgError:
            return None
        lam[support] = solve_factored(factor, np.ones(support.sum()))
        w = A.T @ lam
        values = A @ w
        new = np.where(support, lam > 0, values < 1)
        if np.array_equal(new, support):
            ok = np.abs(values[support] - 1).max() < 1e-9 and values.min() > 1 - 1e-9
            return (w, lam) if ok else None
        key = new.tobytes()
        if key in seen:
            return None
        seen.add(key)
        support = new
    return None


def _nnls_l2(A: np.ndarray, norm_type, labels, scale):
    """min ½‖w‖² s.t. Aw ≥ 1 by least-distance programming (Lawson & Hanson, ch. 23).

    u = argmin_{u≥0} ‖E u − f‖ with E = [Aᵀ; 1ᵀ], f = (0, …, 0, 1); r = E u − f. Then
    r = (Aᵀu, 1ᵀu − 1) and, if r ≠ 0, w = −r_{:D} / r_D with multipliers λ = u / (−r_D). As
    r_D = −‖r‖² < 0 is lost to rounding once ‖w‖ ≳ 1e7, w is taken as the direction r_{:D} = Aᵀu
    scaled to margin 1, and λ as u scaled so that Aᵀλ = w along w.
    If r = 0, u is a Farkas certificate (Aᵀu = 0, 1ᵀu = 1): the problem is infeasible, if the
    certificate stands up (diagnose_infeasible); else None (undecided).
    """
    m, D = A.shape
    E = np.vstack([A.T, np.ones((1, m))])
    f = np.zeros(D + 1)
    f[-1] = 1.0
    u, _ = nnls(E, f, maxiter=50 * max(m, D))
    r = E @ u - f
    direction = r[:D]  # = −r_{:D} / r_D up to the positive factor ‖r‖²
    margin = np.min(A @ direction)
    # ‖r‖ = 1/√(1+‖w‖²) on unit rows: small means no w, or none float64 can verify
    if np.linalg.norm(r) * NUMERICAL_LIMIT > 1 and margin > 0:
        w = direction / margin
        return w, u * (w @ w) / (w @ (A.T @ u))
    diagnose_infeasible(A, norm_type, labels, scale, hint=u)
    return None


class _RowsKey:
    """Constraint rows as a cache key: equal when shape, dtype and bytes are."""

    __slots__ = ("A", "data", "digest")

    def __init__(self, A: np.ndarray):
        self.A, self.data = A, A.tobytes()
        self.digest = hash((A.shape, A.dtype.str, self.data))

    def __hash__(self) -> int:
        return self.digest

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, _RowsKey)
            and (self.A.shape, self.A.dtype) == (other.A.shape, other.A.dtype)
            and self.data == other.data
        )


# Each norm's solve of one Att-SVM starts from its ℓ2 solution (md-local: 3 norms of ~135
# problems in each measuring; the ℓ2 solves were a quarter of its SVMs' time).
@functools.lru_cache(maxsize=256)
def _remembered_active_set_l2(rows: _RowsKey):
    return _active_set_l2(rows.A)


def active_set_l2(A: np.ndarray):
    """_active_set_l2(A), remembered for the last 256 distinct A (copies returned)."""
    found = _remembered_active_set_l2(_RowsKey(A))
    return None if found is None else tuple(np.copy(x) for x in found)


def solve_l2(A: np.ndarray, norm_type, labels, scale: float):
    """(w, λ, method) with λ for ½‖w‖² (w = Aᵀλ), or None if undecided, for unit-scale rows A
    (the data's divided by scale); raises InfeasibleSVMError (bounds in norm_type)."""
    if A.shape[0] <= A.shape[1]:  # else the Gram matrix is singular
        found = active_set_l2(A)
        if found is not None:
            return *found, "active-set"
    found = _nnls_l2(A, norm_type, labels, scale)
    return None if found is None else (*found, "nnls")
