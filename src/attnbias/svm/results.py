"""What the solvers return: the solution, its multipliers and how well it satisfies the KKT.

A batch reports every instance, solved or not: `status` is "optimal" (KKT residual verified
≤ KKT_TOL), "optimal_inaccurate" (verified only to a looser tolerance; warned), "infeasible" (no w,
or none that float64 can verify; `error` is the InfeasibleSVMError with its certificate) or
"failed" (no solver's answer passed the verification; `error` is the SVMSolveError). Unsolved
results hold None for the arrays and NaN for the numbers; `solved` tells them apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .infeasible import InfeasibleSVMError
from .norms import norm_value


@dataclass(frozen=True, eq=False, repr=False)
class _Solution:
    norm: float  # the minimised norm of the solution
    norm_type: float | str  # p (2.0 for Frobenius) or "nuc"
    margin: float  # min constraint value, 1 up to rounding
    status: str  # "optimal", "optimal_inaccurate", "infeasible" or "failed"
    dual: np.ndarray | None  # multipliers λ ≥ 0, one per constraint (norm convention, 1ᵀλ = norm)
    kkt_residual: float  # max violation of the KKT conditions, dimensionless
    solve_time: float  # seconds
    constraint_values: np.ndarray | None  # a_kᵀw for every constraint (≥ 1)
    solver: str  # which method produced the solution
    error: Exception | None  # why there is no solution (what the single-instance call raises)

    @property
    def solved(self) -> bool:
        return self.error is None

    def __repr__(self) -> str:
        if not self.solved:
            return f"{type(self).__name__}(norm_type={self.norm_type!r}, status={self.status!r})"
        return (
            f"{type(self).__name__}(norm_type={self.norm_type!r}, norm={self.norm:.6g}, "
            f"margin={self.margin:.6g}, status={self.status!r}, "
            f"kkt_residual={self.kkt_residual:.1e}, solver={self.solver!r}, "
            f"solve_time={self.solve_time:.3g})"
        )


@dataclass(frozen=True, eq=False, repr=False)
class MaxMarginResult(_Solution):
    w: np.ndarray | None


@dataclass(frozen=True, eq=False, repr=False)
class AttSVMResult(_Solution):
    W: np.ndarray | None  # (d, d)
    constraints: np.ndarray  # (n(T−1), 2): the (sample, token) of each constraint


@dataclass(frozen=True, eq=False, repr=False)
class HeadSVMResult(_Solution):
    v: np.ndarray | None  # (d,); constraint k is sample k


def result_fields(A, norm_type, solution) -> dict:
    """The _Solution fields of a verified solution of A w ≥ 1 (a solver.Solved)."""
    values = A @ solution.w
    return dict(
        norm=norm_value(solution.w, norm_type),
        norm_type=norm_type,
        margin=float(values.min()),
        status=solution.status,
        dual=solution.dual,
        kkt_residual=solution.kkt_residual,
        solve_time=solution.seconds,
        constraint_values=values,
        solver=solution.solver,
        error=None,
    )


def unsolved_fields(norm_type, error: Exception) -> dict:
    """The _Solution fields of an instance without a solution: status from the error."""
    return dict(
        norm=np.nan,
        norm_type=norm_type,
        margin=np.nan,
        status="infeasible" if isinstance(error, InfeasibleSVMError) else "failed",
        dual=None,
        kkt_residual=np.nan,
        solve_time=np.nan,
        constraint_values=None,
        solver="",
        error=error,
    )
