"""The public solvers: max_margin for any A, att_svm and head_svm, one instance or a batch.

A single instance raises when there is no solution (InfeasibleSVMError, SVMSolveError); a batch
returns a result for every instance, whose `status` says whether it was solved (see results).
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import torch

from .._validate import as_tensor
from .conic import parametric_conic
from .memory import DEFAULT_MAX_MEMORY_GB
from .norms import MATRIX_NORMS, parse_norm, square_side
from .problems import AttProblem, HeadProblem, MatrixProblem, check_size
from .results import AttSVMResult, HeadSVMResult, MaxMarginResult
from .tokens import to_numpy


def max_margin(A, norm=2.0, *, max_memory_gb=DEFAULT_MAX_MEMORY_GB) -> MaxMarginResult:
    """min ‖w‖ s.t. A w ≥ 1 for a constraint matrix A (m, D).

    norm: a number p ≥ 1 or float("inf") (entrywise ℓp; "fro" = 2, "inf" = "max" = ∞), or a
    norm of W = w.reshape(d, d) (row-major, D = d²): "nuc" (nuclear) or "spectral" (largest
    singular value). max_memory_gb: ValueError before solving if the solve would need more
    memory than this (an estimate from the size and the norm: svm/memory.py); None: no limit.
    Raises InfeasibleSVMError if no w satisfies the constraints (or none that float64 can
    verify), SVMSolveError if no solver's answer passes the KKT verification.
    """
    A = to_numpy(as_tensor(A, "A"))
    if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
        raise ValueError(f"A must have shape (m, D) with m, D >= 1, got {A.shape}")
    norm_type = parse_norm(norm)
    if norm_type in MATRIX_NORMS:
        square_side(A.shape[1], norm_type)
    check_size(*A.shape, norm_type, max_memory_gb)
    return MatrixProblem(A).solve(norm_type)


def att_svm(X, z, alpha, norm=2.0, *, max_memory_gb=DEFAULT_MAX_MEMORY_GB) -> AttSVMResult:
    """W_mm = argmin ‖W‖ s.t. (x_{i,α_i} − x_{i,t})ᵀ W z_i ≥ 1 for all i and t ≠ α_i.

    X (n, T, d), z (n, d), alpha (n,) token indices (or one int for all samples); norm: p ≥ 1
    or float("inf") (entrywise ℓp; "fro", "inf", "max" name 2 and ∞), "nuc" or "spectral". The
    ℓ1, ℓ∞, nuclear and spectral norms are not strictly convex: W need not be unique, only the
    optimal value ‖W_mm‖ is. max_memory_gb: as max_margin, checked from n, T, d before the
    constraint matrix is built. Raises InfeasibleSVMError naming the reason if no W exists
    (or none that float64 can verify), SVMSolveError if no answer passes the KKT verification.

    Torch in, torch out: where X is a torch tensor, the result's arrays (W, dual,
    constraint_values, constraints) are torch tensors on X's device, float64 (int64 for
    constraints) whatever X's dtype: the solution is computed and verified in float64. NumPy
    (or nested lists) in: NumPy out.
    """
    norm_type = parse_norm(norm)
    return like_input(AttProblem(X, z, alpha, norm_type, max_memory_gb).solve(norm_type), X)


def head_svm(X, y, alpha, p=2.0, *, max_memory_gb=DEFAULT_MAX_MEMORY_GB) -> HeadSVMResult:
    """v_mm = argmin ‖v‖_p s.t. y_i vᵀx_{i,α_i} ≥ 1 for all i (p ≥ 1, float("inf"), "fro",
    "inf" or "max"; v is a vector, so no matrix norm); raises as att_svm, and returns torch
    tensors for a torch X as att_svm does."""
    norm_type = parse_norm(p, "p", allow_matrix=False)
    problem = HeadProblem(X, y, alpha)
    check_size(*problem.A.shape, norm_type, max_memory_gb)
    return like_input(problem.solve(norm_type), X)


def like_input(result, like):
    """`result` with its arrays as torch tensors on `like`'s device where `like` (the main
    input) is a torch tensor: torch in, torch out. As it is otherwise."""
    if not isinstance(like, torch.Tensor):
        return result
    arrays = {
        f.name: torch.from_numpy(np.ascontiguousarray(value)).to(like.device)
        for f in fields(result)
        if isinstance(value := getattr(result, f.name), np.ndarray)
    }
    return replace(result, **arrays)


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


def att_svm_batch(
    Xs, zs, alphas, norm=2.0, *, max_memory_gb=DEFAULT_MAX_MEMORY_GB
) -> list[AttSVMResult]:
    """att_svm for many same-shape instances (B, n, T, d), (B, n, d), (B, n).

    Never raises for one instance's lack of a solution: each result's `status` is "optimal" or
    "optimal_inaccurate" (W set), "infeasible" (W None; `error` is the InfeasibleSVMError with
    the constraints involved and the Farkas certificate, if any) or "failed" (W None; `error` is
    the SVMSolveError). Bad input still raises. ℓp and ℓ2 use the fast in-house solvers per
    instance (ℓ∞ and ℓ1 by HiGHS); the nuclear and spectral fallbacks are compiled once by cvxpy
    with A as a parameter and re-solved for each instance. Torch in (a stacked tensor, or a
    list of tensors), torch out, as att_svm.
    """
    norm_type = parse_norm(norm)
    Xs, zs, alphas = _batch_items(Xs, "Xs"), _batch_items(zs, "zs"), list(alphas)
    _same_length(Xs=Xs, zs=zs, alphas=alphas)
    problems = [  # max_memory_gb as att_svm, for the batch (all its constraint matrices held)
        AttProblem(X, z, a, norm_type, max_memory_gb, instances=len(Xs))
        for X, z, a in zip(Xs, zs, alphas)
    ]
    if len({p.A.shape for p in problems}) > 1:
        raise ValueError("att_svm_batch needs instances of the same shape (n, T, d)")
    conic = parametric_conic(problems[0].A.shape, norm_type) if problems else None
    return [like_input(p.outcome(norm_type, conic), X) for p, X in zip(problems, Xs)]


def head_svm_batch(
    Xs, ys, alphas, p=2.0, *, max_memory_gb=DEFAULT_MAX_MEMORY_GB
) -> list[HeadSVMResult]:
    """head_svm for many instances, with a status per instance as in att_svm_batch (v None
    when there is no solution)."""
    norm_type = parse_norm(p, "p", allow_matrix=False)
    Xs, ys, alphas = _batch_items(Xs, "Xs"), _batch_items(ys, "ys"), list(alphas)
    _same_length(Xs=Xs, ys=ys, alphas=alphas)
    problems = [HeadProblem(X, y, a) for X, y, a in zip(Xs, ys, alphas)]
    for problem in problems:
        check_size(*problem.A.shape, norm_type, max_memory_gb, instances=len(problems))
    return [like_input(problem.outcome(norm_type), X) for problem, X in zip(problems, Xs)]
