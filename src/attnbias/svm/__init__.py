"""Max-margin problems: the Att-SVM and the head SVM (docs/theory.md#max-margin).

Both are instances of one problem, solved by `max_margin`:

    min ‖w‖  s.t.  A w ≥ 1        (one row of A per constraint)

For the Att-SVM the row of constraint (i, t) is vec((x_{i,α_i} − x_{i,t}) z_iᵀ) and w = vec(W)
(row-major); for the head SVM the row of sample i is y_i x_{i,α_i}.

Multipliers use the norm (not squared-norm) convention: λ ≥ 0 with Aᵀλ ∈ ∂‖w‖ and 1ᵀλ = ‖w‖;
λ solves the dual  max 1ᵀλ  s.t.  ‖Aᵀλ‖_* ≤ 1, λ ≥ 0,  whose value equals ‖w_mm‖.

Solvers: ℓ2 — primal-dual active set on the Gram matrix, non-negative least squares as fallback
(both exact); 1 < p < ∞ — a primal-dual interior point method followed by a Newton polish on the
support; p = 1 and p = ∞ — LPs by HiGHS; nuclear and spectral (largest singular value) — for
the Att-SVM one primal-dual interior point that uses its rank-one rows (sdp; nuclear through its
dual, spectral directly), else cvxpy/Clarabel; cvxpy/Clarabel is the fallback for every norm.
Every answer is verified by one NaN-aware, scale-safe check, whichever solver produced it:
`kkt_residual` is the largest violation of the KKT conditions, and the status is "optimal" only
when it is at most 1e-6 (every p ≥ 1 is supported, p = 1000, p = 1.001 and ∞ too).
A single instance raises InfeasibleSVMError (also when a solution would need ‖w‖ beyond what
float64 can verify, with the true reason) or SVMSolveError; a batch reports a status per instance.

Every solver refuses up front (ValueError) a problem whose estimated memory exceeds
max_memory_gb (8 GB by default; memory.py says how it is estimated).

Layout (each file reads top to bottom): tokens — token scores and choice; norms — the norms
and the KKT residual; results — the result dataclasses; memory — the memory estimate;
infeasible — the errors, short rows and Farkas certificates; cholesky — the Gram matrix and the
Cholesky factor and solve the solvers share; l2, lp, l1, linf, sdp, conic — the solvers;
solver — the verified core min ‖w‖ s.t. Aw ≥ 1; problems — the constraint matrices and the solve
of one instance; api — max_margin, att_svm, head_svm and their batches.
"""

from .api import att_svm, att_svm_batch, head_svm, head_svm_batch, max_margin
from .infeasible import InfeasibleSVMError, SVMSolveError
from .memory import DEFAULT_MAX_MEMORY_GB, solver_memory
from .norms import parse_norm
from .problems import constraint_matrix
from .results import AttSVMResult, HeadSVMResult, MaxMarginResult
from .tokens import optimal_tokens, selected_tokens, token_scores

__all__ = [
    "DEFAULT_MAX_MEMORY_GB",
    "AttSVMResult",
    "HeadSVMResult",
    "InfeasibleSVMError",
    "MaxMarginResult",
    "SVMSolveError",
    "att_svm",
    "att_svm_batch",
    "constraint_matrix",
    "head_svm",
    "head_svm_batch",
    "max_margin",
    "optimal_tokens",
    "parse_norm",
    "selected_tokens",
    "solver_memory",
    "token_scores",
]
