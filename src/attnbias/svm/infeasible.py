"""Infeasibility: the error, zero constraint rows and Farkas certificates naming the culprits."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

ZERO_RTOL = 1e-13  # constraint rows this short (relative to the longest) count as zero


class InfeasibleSVMError(ValueError):
    """No w satisfies A w ≥ 1.

    `constraints` lists the rows involved; `certificate` (when the reason is not a zero row) holds
    Farkas multipliers λ ≥ 0 with Aᵀλ = 0 and 1ᵀλ = 1: Σ λ_k a_kᵀw = 0 < 1 for every w.
    """

    def __init__(self, message: str, constraints=(), certificate: np.ndarray | None = None):
        super().__init__(message)
        self.constraints = np.asarray(constraints, dtype=np.int64)
        self.certificate = certificate


def _constraint_name(k: int) -> str:
    """How error messages name constraint k of a plain constraint matrix."""
    return f"constraint {k}"


def _zero_rows(A: np.ndarray) -> np.ndarray:
    """Indices of the rows of A that are zero relative to the longest one."""
    lengths = np.linalg.norm(A, axis=1)
    return np.flatnonzero(lengths <= ZERO_RTOL * lengths.max())


def _check_zero_rows(A, name_of):
    zero = _zero_rows(A)
    if zero.size:
        names = ", ".join(name_of(k) for k in zero[:5])
        raise InfeasibleSVMError(
            f"no w satisfies all margin constraints: the constraint vector of {names} is zero, "
            "so its margin is 0 for every w",
            zero,
        )


def _raise_infeasible(A, name_of, hint=None):
    """Raise InfeasibleSVMError naming the constraints of a Farkas certificate.

    A vertex of {λ ≥ 0 : Aᵀλ = 0, 1ᵀλ = 1} (HiGHS) involves few constraints; `hint` is used if
    that LP fails numerically.
    """
    m, D = A.shape
    res = linprog(
        np.zeros(m),
        A_eq=np.vstack([A.T, np.ones((1, m))]),
        b_eq=np.r_[np.zeros(D), 1.0],
        bounds=(0, None),
        method="highs",
    )
    cert = res.x if res.status == 0 else hint
    if cert is None:
        raise InfeasibleSVMError(
            "no w satisfies all margin constraints (the solver says infeasible)"
        )
    involved = np.flatnonzero(cert > 1e-9)
    involved = involved[np.argsort(-cert[involved])]
    listed = ", ".join(f"{name_of(k)} × {cert[k]:.3g}" for k in involved[:8])
    more = f" and {len(involved) - 8} more" if len(involved) > 8 else ""
    raise InfeasibleSVMError(
        "no w satisfies all margin constraints: the weighted sum of the constraint vectors of "
        f"{listed}{more} is zero (a Farkas certificate), so their weighted margins sum to 0 < 1 "
        "for every w",
        involved,
        cert,
    )
