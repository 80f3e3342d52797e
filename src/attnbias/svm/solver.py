"""The core solver: min ‖w‖ s.t. A w ≥ 1 for any supported norm, on unit-scale rows, verified.

The ℓ2 solve comes first for every norm: it decides feasibility (naming a Farkas certificate if
there is none) and starts the ℓp interior point. Then the norm's solvers are tried in order, the
in-house one first and cvxpy/Clarabel last; each answer is verified by the same KKT check
(norms.kkt_residual), whichever solver produced it, and the first that passes is returned.
"""

from __future__ import annotations

import time
import warnings
from typing import NamedTuple

import numpy as np

from .conic import conic_solve
from .infeasible import SVMSolveError, check_short_rows
from .l1 import solve_l1
from .l2 import solve_l2
from .linf import solve_linf
from .lp import solve_lp
from .matrix_norms import MATRIX_NORM_SOLVERS
from .norms import MATRIX_NORMS, kkt_residual

KKT_TOL = 1e-6  # a verified solution: "optimal"
INACCURATE_TOL = 1e-3  # up to this: "optimal_inaccurate" (warned); beyond: no solution


class Solved(NamedTuple):
    w: np.ndarray
    dual: np.ndarray  # multipliers in the norm convention
    status: str
    kkt_residual: float
    seconds: float
    solver: str


def _l2_solution(As, scale, norm_type, labels, lifted):
    """(w, λ of ½‖w‖², method), or None; raises InfeasibleSVMError. Clarabel steps in where the
    in-house ℓ2 solvers cannot decide (badly conditioned rows)."""
    found = solve_l2(As, norm_type, labels, scale)
    if found is not None:
        return found
    found = _attempt(lambda: conic_solve(As, 2.0, lifted))
    if isinstance(found, str):
        return None
    w, lam = found
    return w, lam * np.linalg.norm(w), "clarabel"


def _attempts(As, scale, norm_type, labels, lifted, conic, rank_one):
    """The norm's solvers in order, as (name, solve) with solve() → (w, λ) or None."""
    l2 = _l2_solution(As, scale, norm_type, labels, lifted)
    if norm_type == 2.0 and l2 is not None:
        w, lam, method = l2
        yield method, lambda: (w, lam / np.linalg.norm(w))
        if method == "clarabel":
            return
    elif norm_type == 1.0:
        kappa = np.abs(l2[0]).sum() if l2 is not None else 1.0
        yield "highs", lambda: solve_l1(As, lifted, kappa)
    elif norm_type == np.inf:
        kappa = np.abs(l2[0]).max() if l2 is not None else 1.0
        yield "highs", lambda: solve_linf(As, lifted, kappa)
    elif norm_type not in (2.0, *MATRIX_NORMS) and l2 is not None:
        yield "interior-point", lambda: solve_lp(As, norm_type, l2[0], l2[1])
    elif norm_type in MATRIX_NORM_SOLVERS and rank_one is not None:
        factors, w_l2 = (rank_one[0] / scale, rank_one[1]), None if l2 is None else l2[0]
        if (solve := MATRIX_NORM_SOLVERS[norm_type].solve(factors, w_l2)) is not None:
            yield "interior-point-sdp", solve
    if conic is not None:
        yield "clarabel", lambda: conic(As)
    else:
        yield "clarabel", lambda: conic_solve(As, norm_type, lifted)


def _attempt(solve):
    """solve() → (w, λ), or a string saying why there is none."""
    try:
        found = solve()
    except (ArithmeticError, ValueError, RuntimeError, np.linalg.LinAlgError) as err:
        return str(err)
    return "no answer" if found is None else found


def _verified(As, norm_type, w, lam):
    """(w scaled to margin exactly 1, λ, KKT residual); the residual is NaN for a NaN anywhere."""
    w, lam = np.asarray(w, dtype=np.float64), np.asarray(lam, dtype=np.float64)
    margin = np.min(As @ w)
    if margin > 0:  # exact feasibility; never increases the norm of a feasible point
        w = w / margin
    return w, lam, kkt_residual(As, w, lam, norm_type)


def solve_max_margin(A, norm_type, labels, lifted=None, conic=None, rank_one=None) -> Solved:
    """Solve min ‖w‖ s.t. A w ≥ 1, verified.

    labels names the constraints in errors (title, name(k), describe(k)); lifted: sparse factors
    for the conic solvers; conic: a compiled conic solver for the batch; rank_one: (U, V) with
    row k = vec(u_k v_kᵀ) (the Att-SVM's), for the structured nuclear-norm solver. Raises
    InfeasibleSVMError, or SVMSolveError if no answer passes the KKT verification.
    """
    start = time.perf_counter()
    check_short_rows(A, norm_type, labels)
    top = np.max(np.abs(A))
    scale = top * np.linalg.norm(A / top, axis=1).max()
    As = A / scale  # unit-scale rows: w → w·scale, λ → λ·scale; the residual is scale-free
    if lifted is not None:
        lifted = (lifted[0] / scale, lifted[1])
    best, failures = None, []
    for solver, solve in _attempts(As, scale, norm_type, labels, lifted, conic, rank_one):
        found = _attempt(solve)
        if isinstance(found, str):
            failures.append(f"{solver}: {found}")
            continue
        w, lam, kkt = _verified(As, norm_type, *found)
        if best is None or kkt < best[2] or np.isnan(best[2]):
            best = (w, lam, kkt, solver)
        if kkt <= KKT_TOL:
            break
        failures.append(f"{solver}: KKT residual {kkt:.1e}")
    if best is None or not best[2] <= INACCURATE_TOL:  # also NaN
        raise SVMSolveError(
            f"no solver's answer to the max-margin problem (norm {norm_type}) passes the KKT "
            f"verification: {'; '.join(failures)}"
        )
    w, lam, kkt, solver = best
    status = "optimal" if kkt <= KKT_TOL else "optimal_inaccurate"
    if status != "optimal":
        warnings.warn(
            f"max-margin solution ({solver}, norm {norm_type}) is inaccurate: "
            f"KKT residual {kkt:.1e}",
            RuntimeWarning,
            stacklevel=3,
        )
    with np.errstate(over="ignore"):  # checked below: rows this short put w beyond float64
        w, lam = w / scale, lam / scale
    if not (np.isfinite(w).all() and np.isfinite(lam).all()):
        raise SVMSolveError(
            f"the max-margin solution (norm {norm_type}) lies beyond the float64 range: the "
            f"constraint vectors are {scale:.3g} long, so w is about 1/{scale:.3g}; scale the "
            "inputs up"
        )
    return Solved(w, lam, status, kkt, time.perf_counter() - start, solver)
