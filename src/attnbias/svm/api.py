"""The public solvers: max_margin for any A, att_svm and head_svm, one instance or a batch.

A single instance raises when there is no solution (InfeasibleSVMError, SVMSolveError); a batch
returns a result for every instance, whose `status` says whether it was solved (see results).
"""

from __future__ import annotations

from .._validate import as_tensor
from .conic import parametric_conic
from .norms import MATRIX_NORMS, parse_norm, square_side
from .problems import AttProblem, HeadProblem, MatrixProblem
from .results import AttSVMResult, HeadSVMResult, MaxMarginResult
from .tokens import to_numpy


def max_margin(A, norm=2.0) -> MaxMarginResult:
    """min ‖w‖ s.t. A w ≥ 1 for a constraint matrix A (m, D).

    norm: a number p ≥ 1 or float("inf") (entrywise ℓp; "fro" = 2, "inf" = "max" = ∞), or a
    norm of W = w.reshape(d, d) (row-major, D = d²): "nuc" (nuclear) or "spectral" (largest
    singular value).
    Raises InfeasibleSVMError if no w satisfies the constraints (or none that float64 can
    verify), SVMSolveError if no solver's answer passes the KKT verification.
    """
    A = to_numpy(as_tensor(A, "A"))
    if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
        raise ValueError(f"A must have shape (m, D) with m, D >= 1, got {A.shape}")
    norm_type = parse_norm(norm)
    if norm_type in MATRIX_NORMS:
        square_side(A.shape[1], norm_type)
    return MatrixProblem(A).solve(norm_type)


def att_svm(X, z, alpha, norm=2.0) -> AttSVMResult:
    """W_mm = argmin ‖W‖ s.t. (x_{i,α_i} − x_{i,t})ᵀ W z_i ≥ 1 for all i and t ≠ α_i.

    X (n, T, d), z (n, d), alpha (n,) token indices (or one int for all samples); norm: p ≥ 1
    or float("inf") (entrywise ℓp; "fro", "inf", "max" name 2 and ∞), "nuc" or "spectral". The
    ℓ1, ℓ∞, nuclear and spectral norms are not strictly convex: W need not be unique, only the
    optimal value ‖W_mm‖ is. Raises InfeasibleSVMError naming the reason if no W exists
    (or none that float64 can verify), SVMSolveError if no answer passes the KKT verification.
    """
    return AttProblem(X, z, alpha).solve(parse_norm(norm))


def head_svm(X, y, alpha, p=2.0) -> HeadSVMResult:
    """v_mm = argmin ‖v‖_p s.t. y_i vᵀx_{i,α_i} ≥ 1 for all i (p ≥ 1, float("inf"), "fro",
    "inf" or "max"; v is a vector, so no matrix norm); raises as att_svm."""
    return HeadProblem(X, y, alpha).solve(parse_norm(p, "p", allow_matrix=False))


# ------------------------------------------------------------------------------------ batches


def _batch_items(arrays, name):
    """A stack (B, ...) or a sequence of same-shape arrays, as a list."""
    if isinstance(arrays, (list, tuple)):
        return list(arrays)
    arrays = as_tensor(arrays, name)
    return [arrays[b] for b in range(arrays.shape[0])]


def _same_length(**lists):
    lengths = {k: len(v) for k, v in lists.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"batch arguments must have the same length, got {lengths}")


def att_svm_batch(Xs, zs, alphas, norm=2.0) -> list[AttSVMResult]:
    """att_svm for many same-shape instances (B, n, T, d), (B, n, d), (B, n).

    Never raises for one instance's lack of a solution: each result's `status` is "optimal" or
    "optimal_inaccurate" (W set), "infeasible" (W None; `error` is the InfeasibleSVMError with
    the constraints involved and the Farkas certificate, if any) or "failed" (W None; `error` is
    the SVMSolveError). Bad input still raises. ℓp and ℓ2 use the fast in-house solvers per
    instance (ℓ∞ and ℓ1 by HiGHS); the nuclear and spectral fallbacks are compiled once by cvxpy
    with A as a parameter and re-solved for each instance.
    """
    norm_type = parse_norm(norm)
    Xs, zs, alphas = _batch_items(Xs, "Xs"), _batch_items(zs, "zs"), list(alphas)
    _same_length(Xs=Xs, zs=zs, alphas=alphas)
    problems = [AttProblem(X, z, a) for X, z, a in zip(Xs, zs, alphas)]
    if len({p.A.shape for p in problems}) > 1:
        raise ValueError("att_svm_batch needs instances of the same shape (n, T, d)")
    conic = parametric_conic(problems[0].A.shape, norm_type) if problems else None
    return [problem.outcome(norm_type, conic) for problem in problems]


def head_svm_batch(Xs, ys, alphas, p=2.0) -> list[HeadSVMResult]:
    """head_svm for many instances, with a status per instance as in att_svm_batch (v None
    when there is no solution)."""
    norm_type = parse_norm(p, "p", allow_matrix=False)
    Xs, ys, alphas = _batch_items(Xs, "Xs"), _batch_items(ys, "ys"), list(alphas)
    _same_length(Xs=Xs, ys=ys, alphas=alphas)
    return [HeadProblem(X, y, a).outcome(norm_type) for X, y, a in zip(Xs, ys, alphas)]
