"""The ℓ1 solver: min ‖w‖_1 s.t. Aw ≥ 1 as a linear program for HiGHS."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog


def solve_l1(A, lifted=None, kappa=1.0):
    """min ‖w‖_1 as an LP for HiGHS: variables (w, r ≥ |w|[, u = C w]), margins ≥ 1.

    Solved for w/κ on κA (κ ≈ ‖w‖_1, e.g. of the ℓ2 solution) so that the LP's variables are of
    unit scale: HiGHS's absolute tolerances otherwise give wrong multipliers (and a w 10% off the
    optimum) once ‖w‖ is large.
    """
    A = A * kappa
    if lifted is not None:
        lifted = (lifted[0] * kappa, lifted[1])
    m, D = A.shape
    eye = sp.identity(D, format="csr")
    extra = 0 if lifted is None else lifted[1].shape[0]
    zeros = sp.csr_matrix
    bounds = sp.vstack(
        [sp.hstack([eye, -eye, zeros((D, extra))]), sp.hstack([-eye, -eye, zeros((D, extra))])]
    )
    if lifted is None:
        margins = sp.hstack([-sp.csr_matrix(A), zeros((m, D))])
        equalities = {}
    else:
        B, C = lifted
        margins = sp.hstack([zeros((m, 2 * D)), -B])
        equalities = dict(
            A_eq=sp.hstack([C, zeros((extra, D)), -sp.identity(extra)]), b_eq=np.zeros(extra)
        )
    cost = np.concatenate([np.zeros(D), np.ones(D), np.zeros(extra)])
    res = linprog(
        cost,
        A_ub=sp.vstack([bounds, margins]).tocsc(),
        b_ub=np.concatenate([np.zeros(2 * D), -np.ones(m)]),
        bounds=[(None, None)] * D + [(0, None)] * D + [(None, None)] * extra,
        method="highs-ipm",  # with crossover: a vertex, exact
        **equalities,
    )
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the ℓ1 SVM: {res.message}")
    return res.x[:D] * kappa, -res.ineqlin.marginals[2 * D :] * kappa
