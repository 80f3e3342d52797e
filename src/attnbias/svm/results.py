"""What the solvers return: the solution, its multipliers and how well it satisfies the KKT."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .norms import _norm_value


@dataclass(frozen=True, eq=False, repr=False)
class _Solution:
    norm: float  # the minimised norm of the solution
    norm_type: float | str  # p (2.0 for Frobenius) or "nuc"
    margin: float  # min constraint value, 1 up to rounding
    status: str  # "optimal" or "optimal_inaccurate" (KKT residual above KKT_TOL)
    dual: np.ndarray  # multipliers λ ≥ 0, one per constraint (norm convention, 1ᵀλ = norm)
    kkt_residual: float  # max violation of the KKT conditions, dimensionless
    solve_time: float  # seconds
    constraint_values: np.ndarray  # a_kᵀw for every constraint (≥ 1)
    solver: str  # which method produced the solution

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(norm_type={self.norm_type!r}, norm={self.norm:.6g}, "
            f"margin={self.margin:.6g}, status={self.status!r}, "
            f"kkt_residual={self.kkt_residual:.1e}, solver={self.solver!r}, "
            f"solve_time={self.solve_time:.3g})"
        )


@dataclass(frozen=True, eq=False, repr=False)
class MaxMarginResult(_Solution):
    w: np.ndarray


@dataclass(frozen=True, eq=False, repr=False)
class AttSVMResult(_Solution):
    W: np.ndarray  # (d, d)
    constraints: np.ndarray  # (n(T−1), 2): the (sample, token) of each constraint


@dataclass(frozen=True, eq=False, repr=False)
class HeadSVMResult(_Solution):
    v: np.ndarray  # (d,); constraint k is sample k


def _fields(A, norm_type, w, lam, status, kkt, seconds, solver):
    """The _Solution fields of a solution (w, λ, status, kkt, seconds, solver) of A w ≥ 1."""
    values = A @ w
    return dict(
        norm=_norm_value(w, norm_type),
        norm_type=norm_type,
        margin=float(values.min()),
        status=status,
        dual=lam,
        kkt_residual=kkt,
        solve_time=seconds,
        constraint_values=values,
        solver=solver,
    )
