"""The core solver: min ‖w‖ s.t. A w ≥ 1 for any supported norm, on unit-scale rows, verified.

The ℓ2 solve comes first for every norm: it decides feasibility (naming a Farkas certificate if
there is none) and starts the ℓp interior point. Every solution's KKT residual is checked.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .conic import _conic
from .infeasible import _check_zero_rows
from .l1 import _solve_l1
from .l2 import _solve_l2
from .lp import _solve_lp
from .norms import _kkt_residual

KKT_TOL = 1e-6  # a solution with a larger KKT residual is reported "optimal_inaccurate"


def _max_margin(A, norm_type, name_of, lifted=None, conic=None):
    """Solve min ‖w‖ s.t. A w ≥ 1; returns (w, λ, status, kkt, seconds, solver)."""
    start = time.perf_counter()
    _check_zero_rows(A, name_of)
    scale = np.linalg.norm(A, axis=1).max()  # solve with unit-scale rows: w → w·scale, λ → λ·scale
    As = A / scale
    if lifted is not None:
        lifted = (lifted[0] / scale, lifted[1])
    w2, lam2, solver = _solve_l2(As, name_of)  # also the feasibility check for every norm
    if norm_type == 2.0:
        w, lam = w2, lam2 / np.linalg.norm(w2)
    elif norm_type == 1.0:
        (w, lam), solver = _solve_l1(As, lifted), "highs"
    elif norm_type == "nuc":
        solve = conic or (lambda As: _conic(As, "nuc", lifted, name_of))
        (w, lam), solver = solve(As), "clarabel"
    else:
        (w, lam), solver = _solve_lp(As, norm_type, w2, lam2), "interior-point"
        if not _kkt_residual(As, w, lam, norm_type) <= KKT_TOL:  # also catches NaN
            (w, lam), solver = _conic(As, norm_type, lifted, name_of), "clarabel"
    w = w / (As @ w).min()  # exact feasibility, never increases the norm of a feasible point
    w, lam = w / scale, lam / scale
    kkt = _kkt_residual(A, w, lam, norm_type)
    status = "optimal" if kkt <= KKT_TOL else "optimal_inaccurate"
    if status != "optimal":
        warnings.warn(
            f"max-margin solution ({solver}, norm {norm_type}) is inaccurate: "
            f"KKT residual {kkt:.1e}",
            RuntimeWarning,
            stacklevel=3,
        )
    return w, lam, status, kkt, time.perf_counter() - start, solver
