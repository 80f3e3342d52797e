"""Infeasibility: the errors, short constraint rows and Farkas certificates naming the culprits.

Scale-aware: on rows scaled to unit length, a margin of 1 needing ‖w‖ beyond NUMERICAL_LIMIT
cannot be verified in float64 (each margin a_kᵀw would be 1 out of terms ~1e8 times larger), so
such problems are reported as numerically infeasible, with the bound on ‖w‖ that shows why.
Exact infeasibility (a zero row, a certificate that cancels to rounding) is reported as such.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from .norms import dual_norm_value

NUMERICAL_LIMIT = 1e9  # unit-scale rows: a margin of 1 needing a longer w is not verifiable
# (rounding of a_kᵀw is ~ NUMERICAL_LIMIT × eps ≈ 2e-7 of the margin, just under the KKT tolerance)
ROUNDING_RTOL = 1e-12  # a certificate's ‖Σ λ_k a_k‖ (unit rows, 1ᵀλ = 1) this small is zero


class InfeasibleSVMError(ValueError):
    """No w satisfies A w ≥ 1 (or none that float64 can verify).

    `constraints` lists the rows involved; `certificate` (when the reason is not a short row)
    holds multipliers λ ≥ 0, 1ᵀλ = 1, with Aᵀλ = 0 to rounding (a Farkas certificate:
    Σ λ_k a_kᵀw = 0 < 1 for every w). `numerical` is True when the problem is feasible in exact
    arithmetic as far as we know but every solution needs ‖w‖ ≥ `norm_bound`, beyond what float64
    verifies; `norm_bound` is ∞ for exact infeasibility.
    """

    def __init__(
        self,
        message: str,
        constraints=(),
        certificate: np.ndarray | None = None,
        numerical: bool = False,
        norm_bound: float = np.inf,
    ):
        super().__init__(message)
        self.constraints = np.asarray(constraints, dtype=np.int64)
        self.certificate = certificate
        self.numerical = numerical
        self.norm_bound = norm_bound


class SVMSolveError(RuntimeError):
    """No solver produced a solution that passes the KKT verification."""


def relative_row_lengths(A: np.ndarray) -> np.ndarray:
    """‖a_k‖ / max_k ‖a_k‖, computed without overflow (0 for a zero row; all 0 if A is 0)."""
    top = np.max(np.abs(A))
    if top == 0:
        return np.zeros(len(A))
    lengths = np.linalg.norm(A / top, axis=1)
    return lengths / lengths.max()


def check_short_rows(A: np.ndarray, norm_type, labels) -> None:
    """Raise InfeasibleSVMError for zero rows (exactly infeasible) or rows so short relative to
    the longest that a margin of 1 needs ‖w‖ beyond NUMERICAL_LIMIT times the data's scale.

    labels: the problem's `title`, `name(k)` and `describe(k)` (the true reason of short row k).
    """
    lengths = relative_row_lengths(A)
    zero = np.flatnonzero(lengths == 0)
    if zero.size:
        reasons = "; ".join(dict.fromkeys(labels.describe(k) for k in zero[:5]))
        raise InfeasibleSVMError(f"{labels.title}: {reasons}, so the margin is 0 for every w", zero)
    short = np.flatnonzero(lengths * NUMERICAL_LIMIT < 1)
    if short.size:
        bounds = np.array([1 / dual_norm_value(A[k], norm_type) for k in short])
        k = short[np.argmax(bounds)]
        more = f" ({short.size} constraints are this short)" if short.size > 1 else ""
        raise InfeasibleSVMError(
            f"{labels.title} numerically: a margin of 1 on {labels.name(k)} needs "
            f"‖w‖ >= {bounds.max():.3g}, {1 / lengths[k]:.2g} times what the longest constraint "
            f"vector needs, beyond what float64 can verify{more}: {labels.describe(k)}",
            short,
            numerical=True,
            norm_bound=float(bounds.max()),
        )


def _best_certificate(A: np.ndarray, hint=None):
    """λ ≥ 0, 1ᵀλ = 1 minimising ‖Aᵀλ‖_∞ (an LP for HiGHS), or `hint` if that is better.

    Its quality is judged from Aᵀλ recomputed here, not from the LP solver's tolerances.
    """
    m, D = A.shape
    res = linprog(
        np.r_[np.zeros(m), 1.0],  # variables (λ, t): min t s.t. −t ≤ Aᵀλ ≤ t
        A_ub=np.block([[A.T, -np.ones((D, 1))], [-A.T, -np.ones((D, 1))]]),
        b_ub=np.zeros(2 * D),
        A_eq=np.r_[np.ones(m), 0.0][None, :],
        b_eq=[1.0],
        bounds=(0, None),
        method="highs",
    )
    candidates = [res.x[:m]] if res.status == 0 else []
    if hint is not None:
        candidates.append(hint)
    best, best_length = None, np.inf
    for lam in candidates:
        lam = np.maximum(lam, 0.0)
        if not (np.all(np.isfinite(lam)) and lam.sum() > 0):
            continue
        lam = lam / lam.sum()
        length = np.linalg.norm(A.T @ lam)
        if length < best_length:
            best, best_length = lam, length
    return best, best_length


def diagnose_infeasible(A: np.ndarray, norm_type, labels, scale: float = 1.0, hint=None) -> None:
    """Raise InfeasibleSVMError if a certificate shows that no verifiable w exists; return if
    the best certificate found shows nothing (the caller then keeps solving).

    A has unit-scale rows (the data's rows divided by `scale`); bounds are reported in the
    data's units.
    """
    lam, length = _best_certificate(A, hint)
    if lam is None or length * NUMERICAL_LIMIT > 1:
        return
    involved = np.flatnonzero(lam > 1e-9)
    involved = involved[np.argsort(-lam[involved])]
    listed = ", ".join(f"{labels.name(k)} × {lam[k]:.3g}" for k in involved[:8])
    more = f" and {len(involved) - 8} more" if len(involved) > 8 else ""
    if length <= ROUNDING_RTOL:
        raise InfeasibleSVMError(
            f"{labels.title}: the weighted sum of the constraint vectors of {listed}{more} is "
            "zero to rounding (a Farkas certificate), so their weighted margins sum to 0 < 1 "
            "for every w",
            involved,
            lam,
        )
    bound = 1 / (dual_norm_value(A.T @ lam, norm_type) * scale)
    raise InfeasibleSVMError(
        f"{labels.title} numerically: the weighted sum of the constraint vectors of "
        f"{listed}{more} is {length:.2g} of the longest constraint vector, not zero, but "
        f"their margins need ‖w‖ >= {bound:.3g}, {1 / length:.2g} times what the longest "
        "constraint vector alone needs, beyond what float64 can verify",
        involved,
        lam,
        numerical=True,
        norm_bound=bound,
    )
