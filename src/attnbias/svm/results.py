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
    norm: float
    """The minimised norm of the solution (NaN when unsolved)."""
    norm_type: float | str
    """p of the entrywise ℓp norm (2.0: Frobenius), or "nuc"."""
    margin: float
    """The smallest constraint value, 1 up to rounding (NaN when unsolved)."""
    status: str
    """"optimal", "optimal_inaccurate", "infeasible" or "failed" (module docstring)."""
    dual: np.ndarray | None
    """The multipliers λ ≥ 0, shape (constraints,), one per constraint, with 1ᵀλ = norm."""
    kkt_residual: float
    """The largest violation of the KKT conditions, dimensionless."""
    solve_time: float
    """Seconds the solve took."""
    constraint_values: np.ndarray | None
    """a_kᵀw of every constraint, shape (constraints,), each ≥ 1 up to rounding."""
    solver: str
    """Which method produced the solution."""
    error: Exception | None
    """Why there is no solution (what the single-instance call raises); None when solved."""

    @property
    def solved(self) -> bool:
        """Whether there is a solution (`error` is None)."""
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
    """A solution of min ‖w‖ subject to A w ≥ 1, with the fields every result has (norm,
    norm_type, margin, status, dual, kkt_residual, solve_time, constraint_values, solver,
    error, solved)."""

    w: np.ndarray | None
    """The solution vector, shape (columns of A,); None when unsolved."""


@dataclass(frozen=True, eq=False, repr=False)
class AttSVMResult(_Solution):
    """An Att-SVM solution W_mm (docs/theory.md#max-margin), with the fields every result has
    (norm, norm_type, margin, status, dual, kkt_residual, solve_time, constraint_values,
    solver, error, solved); `dual` and `constraint_values` follow the rows of `constraints`.
    Its arrays are NumPy, or torch tensors where the solver was given torch (`att_svm`)."""

    W: np.ndarray | None
    """The solution, shape (d, d); None when unsolved."""
    constraints: np.ndarray
    """Shape (n(T−1), 2): the (sample i, token t) of each constraint
    (x_{i,α_i} − x_{i,t})ᵀ W z_i ≥ 1."""


@dataclass(frozen=True, eq=False, repr=False)
class HeadSVMResult(_Solution):
    """A head-SVM solution v_mm, with the fields every result has (norm, norm_type, margin,
    status, dual, kkt_residual, solve_time, constraint_values, solver, error, solved)."""

    v: np.ndarray | None
    """The solution, shape (d,); constraint k is sample k. None when unsolved."""


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
