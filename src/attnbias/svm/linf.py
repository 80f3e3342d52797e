"""The ℓ∞ solver: min max_k |w_k| s.t. Aw ≥ 1 as a linear program for HiGHS.

Solved in the homogeneous form max s s.t. A u ≥ s·1, −1 ≤ u ≤ 1: the box is a bound on the
variables (no extra rows), and w = u / s with ‖w‖_∞ = 1/s at the optimum.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog


def solve_linf(A, lifted=None, kappa=1.0):
    """(w, λ) of min ‖w‖_∞ s.t. Aw ≥ 1, λ in the norm convention; unverified.

    Solved on κA (κ ≥ ‖w_mm‖_∞, e.g. ‖w_ℓ2‖_∞) so that s is of unit scale (HiGHS's tolerances
    are absolute). The LP's multipliers λ' (1ᵀλ' = 1, ‖κAᵀλ'‖_1 = s at the optimum) are the
    norm convention's up to the factor κ/s. With lifted = (B, C), A = B C through v = C u.
    """
    m, D = A.shape
    ones = np.ones((m, 1))
    if lifted is None:
        margins = sp.hstack([-kappa * sp.csr_matrix(A), ones])  # s − κ a_kᵀu ≤ 0
        equalities, extra = {}, 0
    else:
        B, C = lifted
        extra = C.shape[0]
        margins = sp.hstack([sp.csr_matrix((m, D)), -kappa * B, ones])
        equalities = dict(
            A_eq=sp.hstack([C, -sp.identity(extra), sp.csr_matrix((extra, 1))]),
            b_eq=np.zeros(extra),
        )
    cost = np.zeros(D + extra + 1)
    cost[-1] = -1.0  # maximise s
    res = linprog(
        cost,
        A_ub=margins.tocsc(),
        b_ub=np.zeros(m),
        bounds=[(-1.0, 1.0)] * D + [(None, None)] * (extra + 1),
        method="highs-ipm",  # with crossover: a vertex, exact
        **equalities,
    )
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the ℓ∞ SVM: {res.message}")
    s = res.x[-1]
    if not s > 0:
        raise RuntimeError(f"HiGHS found no positive margin on the ℓ∞ SVM (s = {s:.3g})")
    return res.x[:D] / s * kappa, -res.ineqlin.marginals * (kappa / s)
