"""The conic solver, cvxpy + Clarabel: the nuclear norm (an SDP), and the fallback for ℓp."""

from __future__ import annotations

import warnings

import numpy as np

from .infeasible import _constraint_name, _raise_infeasible
from .norms import _side

CLARABEL_TOL = dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10, tol_ktratio=1e-8)


def _cvxpy_problem(A, norm_type, lifted=None):
    """The cvxpy problem min ‖w‖ s.t. A w ≥ 1 (vectorised; lifted through u = C w if given).

    A may be a cp.Parameter (batch solves compile once). Returns (problem, w, margin constraint).
    """
    import cvxpy as cp

    D = A.shape[1]
    w = cp.Variable(D)
    if norm_type == "nuc":
        d = _side(D)
        objective = cp.normNuc(cp.reshape(w, (d, d), order="C"))
    else:
        objective = cp.pnorm(w, norm_type)
    if lifted is None:
        margins = A @ w >= 1
        constraints = [margins]
    else:
        B, C = lifted
        u = cp.Variable(C.shape[0])
        margins = B @ u >= 1
        constraints = [margins, u == C @ w]
    return cp.Problem(cp.Minimize(objective), constraints), w, margins


def _solve_cvxpy(problem, w, margins, A, name_of):
    import cvxpy as cp

    with warnings.catch_warnings():  # accuracy is judged by our own KKT check instead
        warnings.filterwarnings("ignore", "Solution may be inaccurate", UserWarning)
        problem.solve(solver=cp.CLARABEL, **CLARABEL_TOL)
    if problem.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        _raise_infeasible(A, name_of)
    if w.value is None:
        raise RuntimeError(f"Clarabel failed on the max-margin problem: status {problem.status}")
    return np.asarray(w.value, dtype=np.float64), np.asarray(margins.dual_value, dtype=np.float64)


def _conic(A, norm_type, lifted, name_of):
    return _solve_cvxpy(*_cvxpy_problem(A, norm_type, lifted), A, name_of)


def _parametric_conic(shape, norm_type):
    """For "nuc": one compiled cvxpy problem with A as a parameter, re-solved per instance."""
    if norm_type != "nuc":
        return None
    import cvxpy as cp

    A = cp.Parameter(shape)
    compiled = _cvxpy_problem(A, norm_type)

    def solve(As):
        A.value = As
        return _solve_cvxpy(*compiled, As, _constraint_name)

    return solve
