"""The conic solver, cvxpy + Clarabel: the nuclear and spectral norms (SDPs) of rows without the
Att-SVM's rank-one structure, and the fallback for every norm.

ℓp goes through power cones (approx=False): cvxpy's default rational SOC approximation changes p
(p = 1.0005 is solved as another p) and loses accuracy for p near 1 and large p.
"""

from __future__ import annotations

import warnings

import numpy as np

from .matrix_norms import MATRIX_NORM_SOLVERS
from .norms import MATRIX_NORMS, square_side

CLARABEL_TOL = dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10, tol_ktratio=1e-8)


def _cvxpy_problem(A, norm_type, lifted=None):
    """The cvxpy problem min ‖w‖ s.t. A w ≥ 1 (vectorised; lifted through u = C w if given).

    A may be a cp.Parameter (batch solves compile once). Returns (problem, w, margin constraint).
    """
    import cvxpy as cp

    D = A.shape[1]
    w = cp.Variable(D)
    if norm_type in MATRIX_NORMS:
        d = square_side(D, norm_type)
        W = cp.reshape(w, (d, d), order="C")
        objective = MATRIX_NORM_SOLVERS[norm_type].conic_objective(W)
    elif norm_type in (1.0, 2.0, np.inf):
        objective = cp.norm(w, norm_type)
    else:
        objective = cp.pnorm(w, norm_type, approx=False)
    if lifted is None:
        margins = A @ w >= 1
        constraints = [margins]
    else:
        B, C = lifted
        u = cp.Variable(C.shape[0])
        margins = B @ u >= 1
        constraints = [margins, u == C @ w]
    return cp.Problem(cp.Minimize(objective), constraints), w, margins


def _solve_cvxpy(problem, w, margins):
    """(w, λ), or None when Clarabel has no answer (infeasibility is decided by the ℓ2 solve)."""
    import cvxpy as cp

    with warnings.catch_warnings():  # accuracy is judged by our own KKT check instead
        warnings.filterwarnings("ignore", "Solution may be inaccurate", UserWarning)
        try:
            problem.solve(solver=cp.CLARABEL, **CLARABEL_TOL)
        except cp.SolverError:
            return None
    if w.value is None or margins.dual_value is None:
        return None
    return np.asarray(w.value, dtype=np.float64), np.asarray(margins.dual_value, dtype=np.float64)


def conic_solve(A, norm_type, lifted=None):
    return _solve_cvxpy(*_cvxpy_problem(A, norm_type, lifted))


def parametric_conic(shape, norm_type):
    """For the matrix norms: one compiled cvxpy problem with A as a parameter, re-solved per
    instance."""
    if norm_type not in MATRIX_NORMS:
        return None
    import cvxpy as cp

    A = cp.Parameter(shape)
    compiled = _cvxpy_problem(A, norm_type)

    def solve(As):
        A.value = As
        return _solve_cvxpy(*compiled)

    return solve
