"""Max-margin problems: the Att-SVM and the head SVM (SPEC §2).

Both are instances of one problem, solved by `max_margin`:

    min ‖w‖  s.t.  A w ≥ 1        (one row of A per constraint)

For the Att-SVM the row of constraint (i, t) is vec((x_{i,α_i} − x_{i,t}) z_iᵀ) and w = vec(W)
(row-major); for the head SVM the row of sample i is y_i x_{i,α_i}.

Multipliers use the norm (not squared-norm) convention: λ ≥ 0 with Aᵀλ ∈ ∂‖w‖ and 1ᵀλ = ‖w‖;
λ solves the dual  max 1ᵀλ  s.t.  ‖Aᵀλ‖_* ≤ 1, λ ≥ 0,  whose value equals ‖w_mm‖.

Solvers: ℓ2 — primal-dual active set on the Gram matrix, non-negative least squares as fallback
(both exact); 1 < p < ∞ — a primal-dual interior point method followed by a Newton polish on the
support (cvxpy/Clarabel as fallback); p = 1 — the LP by HiGHS; nuclear — cvxpy/Clarabel (SDP).
Every solution is verified: `kkt_residual` is the largest violation of the KKT conditions.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.optimize import linprog, nnls

from ._validate import as_tensor, check_p, check_sequences, check_tokens

__all__ = [
    "AttSVMResult",
    "HeadSVMResult",
    "InfeasibleSVMError",
    "MaxMarginResult",
    "att_svm",
    "att_svm_batch",
    "constraint_matrix",
    "head_svm",
    "head_svm_batch",
    "max_margin",
    "optimal_tokens",
    "selected_tokens",
    "token_scores",
]

KKT_TOL = 1e-6  # a solution with a larger KKT residual is reported "optimal_inaccurate"
TIE_RTOL = 1e-9  # scores this close (relative) to the best one count as tied
ZERO_RTOL = 1e-13  # constraint rows this short (relative to the longest) count as zero
INFEASIBLE_RTOL = 1e-9  # NNLS residual 1/√(1+‖w‖²) below this (unit rows): treated as infeasible
CLARABEL_TOL = dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10, tol_ktratio=1e-8)


class InfeasibleSVMError(ValueError):
    """No w satisfies A w ≥ 1.

    `constraints` lists the rows involved; `certificate` (when the reason is not a zero row) holds
    Farkas multipliers λ ≥ 0 with Aᵀλ = 0 and 1ᵀλ = 1: Σ λ_k a_kᵀw = 0 < 1 for every w.
    """

    def __init__(self, message: str, constraints=(), certificate: np.ndarray | None = None):
        super().__init__(message)
        self.constraints = np.asarray(constraints, dtype=np.int64)
        self.certificate = certificate


# ---------------------------------------------------------------------------------- results


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


# ----------------------------------------------------------------------------- token choice


def _numpy(t) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float64)


def token_scores(X, y, v) -> np.ndarray:
    """γ_{i,t} = y_i vᵀx_{i,t}, shape (n, T)."""
    X, _, y, v, _ = check_sequences(X, y=y, v=v)
    return _numpy(y)[:, None] * (_numpy(X) @ _numpy(v))


def optimal_tokens(X, y, v) -> np.ndarray:
    """The globally optimal token of each sample, argmax_t γ_{i,t}; a tie raises ValueError."""
    gamma = token_scores(X, y, v)
    best = gamma.argmax(axis=1)
    top = gamma.max(axis=1)
    near = gamma >= (top - TIE_RTOL * np.abs(gamma).max(axis=1))[:, None]
    tied = np.flatnonzero(near.sum(axis=1) > 1)
    if tied.size:
        i = tied[0]
        t1, t2 = np.flatnonzero(near[i])[:2]
        raise ValueError(
            f"optimal token of sample {i} is tied between tokens {t1} and {t2} "
            f"(score {top[i]:.6g}); the globally optimal token must be unique"
        )
    return best.astype(np.int64)


def selected_tokens(W, X, z) -> np.ndarray:
    """argmax_t of the attention logits x_{i,t}ᵀ W z_i (the token softmax puts most weight on)."""
    X, z, _, _, W = check_sequences(X, z=z, W=W)
    if W.dim() != 2:
        raise ValueError(f"W must have shape (d, d), got {tuple(W.shape)}")
    logits = np.einsum("ntj,jk,nk->nt", _numpy(X), _numpy(W), _numpy(z))
    return logits.argmax(axis=1).astype(np.int64)


# ------------------------------------------------------------------------ constraint matrices


def _tokens(alpha, n: int, T: int) -> np.ndarray:
    """α as int64 (n,); a single integer means the same token for every sample."""
    if np.ndim(alpha) == 0 and not isinstance(alpha, (str, bytes)):
        alpha = np.full(n, alpha)
    return check_tokens(alpha, n, T).numpy()


def _differences(X: np.ndarray, alpha: np.ndarray):
    """x_{i,α_i} − x_{i,t} for t ≠ α_i as (n, T−1, d), and the (sample, token) of each row."""
    n, T, _ = X.shape
    rows = np.arange(n)
    others = np.ones((n, T), dtype=bool)
    others[rows, alpha] = False
    diffs = (X[rows, alpha][:, None, :] - X)[others].reshape(n, T - 1, -1)
    return diffs, np.argwhere(others)


def _att_arrays(X, z, alpha):
    X, z, _, _, _ = check_sequences(X, z=z)
    X, z = _numpy(X), _numpy(z)
    return X, z, _tokens(alpha, X.shape[0], X.shape[1])


def constraint_matrix(X, z, alpha) -> np.ndarray:
    """Att-SVM constraint rows, (n(T−1), d²): row (i, t) is vec((x_{i,α_i} − x_{i,t}) z_iᵀ).

    Row-major vec, so a_kᵀ w = (x_{i,α_i} − x_{i,t})ᵀ W z_i with W = w.reshape(d, d); rows are
    ordered by sample, then token.
    """
    X, z, alpha = _att_arrays(X, z, alpha)
    diffs, _ = _differences(X, alpha)
    d = X.shape[2]
    return np.einsum("itj,ik->itjk", diffs, z).reshape(-1, d * d)


def _att_lifting(diffs: np.ndarray, z: np.ndarray):
    """Sparse factors A = B C through u_i = W z_i: B = blockdiag(diffs_i), C w = (W z_i)_i.

    The conic solvers factor a much sparser KKT system this way than with the dense A.
    """
    n, _, d = diffs.shape
    B = sp.block_diag(list(diffs), format="csr")
    i, j, k = np.meshgrid(np.arange(n), np.arange(d), np.arange(d), indexing="ij")
    C = sp.csr_matrix((z[i, k].ravel(), ((i * d + j).ravel(), (j * d + k).ravel())), (n * d, d * d))
    return B, C


# -------------------------------------------------------------------------------- the norms


def _parse_norm(norm, name: str = "norm", allow_nuc: bool = True) -> float | str:
    if isinstance(norm, str):
        if norm.lower() == "fro":
            return 2.0
        if norm.lower() == "nuc" and allow_nuc:
            return "nuc"
        allowed = '"fro", "nuc" or a number p >= 1' if allow_nuc else '"fro" or a number p >= 1'
        raise ValueError(f"{name} must be {allowed}, got {norm!r}")
    return check_p(norm, name)


def _side(D: int) -> int:
    d = round(np.sqrt(D))
    if d * d != D:
        raise ValueError(f"the nuclear norm needs a square W: A must have d*d columns, got {D}")
    return d


def _norm_value(w: np.ndarray, norm_type) -> float:
    if norm_type == "nuc":
        return float(np.linalg.svd(w.reshape(_side(w.size), -1), compute_uv=False).sum())
    return float(np.linalg.norm(w, norm_type))


def _stationarity(w: np.ndarray, G: np.ndarray, norm_type) -> float:
    """How far G = Aᵀλ is from ∂‖w‖, dimensionless (both sides have dual norm 1)."""
    value = _norm_value(w, norm_type)
    if norm_type in (1.0, "nuc"):  # G ∈ ∂‖w‖  ⇔  ‖G‖_* ≤ 1 and ⟨G, w⟩ = ‖w‖
        d = _side(w.size) if norm_type == "nuc" else 0
        dual = np.linalg.norm(G.reshape(d, d), 2) if d else np.abs(G).max()
        return max(dual - 1.0, 0.0) + abs(G @ w / value - 1.0)
    p = norm_type
    gradient = np.sign(w) * np.abs(w / value) ** (p - 1)
    return float(np.linalg.norm(gradient - G, p / (p - 1)))


def _kkt_residual(A: np.ndarray, w: np.ndarray, lam: np.ndarray, norm_type) -> float:
    """Max of primal and dual infeasibility, complementary slackness and stationarity."""
    values = A @ w
    norm = _norm_value(w, norm_type)
    if norm == 0:
        return np.inf
    return float(
        max(
            1.0 - values.min(),
            -lam.min() / norm,  # λ has the units of ‖w‖ (1ᵀλ = ‖w‖)
            np.abs(lam * (values - 1.0)).max() / norm,
            _stationarity(w, A.T @ lam, norm_type),
        )
    )


# -------------------------------------------------------------------------------- ℓ2 solver


def _gram(A: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """A diag(weights) Aᵀ, upper triangle only (BLAS syrk: half the work of A @ A.T)."""
    if weights is not None:
        A = A * np.sqrt(weights)
    return sla.blas.dsyrk(1.0, A)


def _cholesky(K: np.ndarray):
    return sla.cho_factor(K, lower=False, check_finite=False)  # reads the upper triangle


def _active_set_l2(A: np.ndarray, max_iter: int = 50):
    """min ½‖w‖² s.t. Aw ≥ 1 by primal-dual active set on the dual QP (Hintermüller et al.).

    On the support S: (A_S A_Sᵀ) λ_S = 1; S is then updated to {λ > 0} ∪ {margin < 1}. Returns
    (w, λ) with w = Aᵀλ, or None (singular Gram block, cycling) so the caller can fall back.
    """
    m = A.shape[0]
    gram = _gram(A)
    support = np.ones(m, dtype=bool)
    seen = set()
    for _ in range(max_iter):
        if not support.any():
            return None
        lam = np.zeros(m)
        try:
            factor = _cholesky(gram[np.ix_(support, support)])
        except np.linalg.LinAlgError:
            return None
        lam[support] = sla.cho_solve(factor, np.ones(support.sum()))
        w = A.T @ lam
        values = A @ w
        new = np.where(support, lam > 0, values < 1)
        if np.array_equal(new, support):
            ok = np.abs(values[support] - 1).max() < 1e-9 and values.min() > 1 - 1e-9
            return (w, lam) if ok else None
        key = new.tobytes()
        if key in seen:
            return None
        seen.add(key)
        support = new
    return None


def _nnls_l2(A: np.ndarray, name_of):
    """min ½‖w‖² s.t. Aw ≥ 1 by least-distance programming (Lawson & Hanson, ch. 23).

    u = argmin_{u≥0} ‖E u − f‖ with E = [Aᵀ; 1ᵀ], f = (0, …, 0, 1); r = E u − f. Then
    r = (Aᵀu, 1ᵀu − 1) and, if r ≠ 0, w = −r_{:D} / r_D with multipliers λ = u / (−r_D).
    If r = 0, u is a Farkas certificate (Aᵀu = 0, 1ᵀu = 1): the problem is infeasible.
    """
    m, D = A.shape
    E = np.vstack([A.T, np.ones((1, m))])
    f = np.zeros(D + 1)
    f[-1] = 1.0
    u, _ = nnls(E, f, maxiter=50 * max(m, D))
    r = E @ u - f
    if np.linalg.norm(r) <= INFEASIBLE_RTOL or -r[-1] <= 0:
        _raise_infeasible(A, name_of, u / max(u.sum(), 1e-300))
    return -r[:D] / r[-1], u / -r[-1]


def _solve_l2(A: np.ndarray, name_of):
    """(w, λ, method) with λ for ½‖w‖² (w = Aᵀλ); raises InfeasibleSVMError."""
    if A.shape[0] <= A.shape[1]:  # else the Gram matrix is singular
        found = _active_set_l2(A)
        if found is not None:
            return *found, "active-set"
    return *_nnls_l2(A, name_of), "nnls"


# ------------------------------------------------------------------------------ ℓp solver


class _Lp:
    """f(w) = ‖w‖_p^p / p, its conjugate's gradient and inverse Hessian (1 < p < ∞)."""

    def __init__(self, p: float):
        self.p, self.q = p, p / (p - 1)

    def grad(self, w):
        return np.sign(w) * np.abs(w) ** (self.p - 1)

    def conj_grad(self, u):  # (∇f)⁻¹: the w with ∇f(w) = u
        return np.sign(u) * np.abs(u) ** (self.q - 1)

    def inv_hess(self, w):
        """Diagonal of (∇²f)⁻¹ = |w|^{2−p} / (p−1), within 12 decades of its value at max |w|."""
        p, top = self.p, np.abs(w).max()
        floor = max(1e-12 ** (1 / abs(2 - p)), 1e-300)  # keeps (|w|/top)^{2−p} in [1e-12, 1e12]
        ratio = np.maximum(np.abs(w) / top, floor)
        return ratio ** (2 - p) * (top ** (2 - p) / (p - 1))


def _newton_system(A, c, lam, slack, r_dual, r_primal) -> Callable:
    """Factor the interior-point Newton system once; return r_comp ↦ (Δw, Δs, Δλ).

    Equations: ∇²f Δw − AᵀΔλ = −r_dual, AΔw − Δs = −r_primal, λ∘Δs + s∘Δλ = r_comp, with
    (∇²f)⁻¹ = diag(c). Reduced to an m × m system in Δλ, or to D × D in Δw when m > D.
    """
    m, D = A.shape
    if m <= D:  # (A C Aᵀ + S/Λ) Δλ = r_comp/λ − r_primal + A C r_dual
        K = _gram(A, c)
        K[np.diag_indices(m)] += slack / lam
        factor = _cholesky(K)
        shift = A @ (c * r_dual) - r_primal

        def direction(r_comp):
            dlam = sla.cho_solve(factor, r_comp / lam + shift)
            dw = c * (A.T @ dlam - r_dual)
            return dw, A @ dw + r_primal, dlam

        return direction
    M = _gram(A.T, lam / slack)  # (C⁻¹ + Aᵀ(Λ/S)A) Δw = −r_dual + Aᵀ((r_comp − λ r_primal)/s)
    M[np.diag_indices(D)] += 1 / c
    factor = _cholesky(M)

    def direction(r_comp):
        dw = sla.cho_solve(factor, A.T @ ((r_comp - lam * r_primal) / slack) - r_dual)
        ds = A @ dw + r_primal
        return dw, ds, (r_comp - lam * ds) / slack

    return direction


def _step_to_boundary(x: np.ndarray, dx: np.ndarray) -> float:
    shrinking = dx < 0
    return min(1.0, (-x[shrinking] / dx[shrinking]).min()) if shrinking.any() else 1.0


def _interior_point(A, p, w_l2, lam_l2, tol=1e-8, max_iter=100):
    """min ‖w‖_p^p / p s.t. Aw − s = 1, s ≥ 0 by primal-dual path following (Mehrotra σ).

    For p < 2 the dual map λ ↦ w = ∇f*(Aᵀλ) is the smooth one, so w is derived from λ; for p > 2
    w is iterated. Returns (w, λ, s) with λ the multipliers of ‖w‖_p^p / p.
    """
    f = _Lp(p)
    m = A.shape[0]
    from_dual = p < 2
    if from_dual:  # λ along the ℓ2 multipliers, scaled to maximise the dual on that ray
        lam = lam_l2 + 0.1 * lam_l2.mean()
        lam *= (lam.sum() / np.sum(np.abs(A.T @ lam) ** f.q)) ** (1 / (f.q - 1))
        w = f.conj_grad(A.T @ lam)
        slack = np.maximum(A @ w - 1, 1.0)
    else:  # strictly feasible start from the ℓ2 solution
        w = 1.5 * w_l2
        slack = A @ w - 1
        lam = np.sum(np.abs(w) ** p) / m / slack
    for _ in range(max_iter):
        grad = f.grad(w)
        if (
            np.abs(grad - A.T @ lam).max() <= tol * np.abs(grad).max()
            and np.abs(A @ w - 1 - slack).max() <= tol
            and slack @ lam <= tol * (w @ grad)
        ):
            break
        point = _interior_point_step(A, f, from_dual, w, slack, lam)
        if point is None:
            break
        w, slack, lam = point
    return w, lam, slack


def _interior_point_step(A, f, from_dual, w, slack, lam):
    """One Newton step towards s∘λ = σμ; the next (w, s, λ), or None if it makes no progress."""
    r_dual = f.grad(w) - A.T @ lam
    r_primal = A @ w - 1 - slack
    try:
        direction = _newton_system(A, f.inv_hess(w), lam, slack, r_dual, r_primal)
    except np.linalg.LinAlgError:
        return None

    def boundary(ds, dlam):  # largest step keeping s, λ > 0
        return min(_step_to_boundary(slack, ds), _step_to_boundary(lam, dlam))

    def residual(w, slack, lam):
        return np.linalg.norm(
            np.concatenate([f.grad(w) - A.T @ lam, A @ w - 1 - slack, slack * lam - target])
        )

    def trial(dw, ds, dlam, step):
        lam1, slack1 = lam + step * dlam, slack + step * ds
        w1 = f.conj_grad(A.T @ lam1) if from_dual else w + step * dw
        return residual(w1, slack1, lam1) <= (1 - 1e-4 * step) * merit, (w1, slack1, lam1)

    mu = slack @ lam / len(lam)
    _, ds, dlam = direction(-slack * lam)  # the affine predictor sets the centring σ
    step = boundary(ds, dlam)
    target = min(((slack + step * ds) @ (lam + step * dlam) / len(lam) / mu) ** 3, 1.0) * mu
    merit = residual(w, slack, lam)
    # Mehrotra's corrector if it reduces the residual, else a damped centred Newton step
    mehrotra = direction(target - slack * lam - ds * dlam)
    ok, point = trial(*mehrotra, 0.99 * boundary(*mehrotra[1:]))
    if ok:
        return point
    centred = direction(target - slack * lam)
    step = 0.99 * boundary(*centred[1:])
    for _ in range(40):
        ok, point = trial(*centred, step)
        if ok:
            return point
        step /= 2
    return None


def _polish_lp(A, p, w, lam, slack):
    """Newton's method on the KKT equations of the support S: ∇f(w) = A_Sᵀλ_S, A_S w = 1.

    S = {λ/max λ > s}: near the end λ_k s_k ≈ μ → 0, so for each constraint one of the two
    (scale-free: margins are ~1) is many decades below the other. Returns the exact (w, λ) if
    it is a KKT point, else None.
    """
    f = _Lp(p)
    support = lam / lam.max() > slack
    if not support.any():
        return None
    AS = A[support]
    lam_s = lam[support]
    from_dual = p <= 2
    for _ in range(10):
        if from_dual:
            w = f.conj_grad(AS.T @ lam_s)
        grad = f.grad(w)
        r_dual = grad - AS.T @ lam_s
        r_primal = AS @ w - 1
        if max(np.abs(r_dual).max() / np.abs(grad).max(), np.abs(r_primal).max()) < 1e-14:
            break
        c = f.inv_hess(w)
        try:
            factor = _cholesky(_gram(AS, c))
        except np.linalg.LinAlgError:
            return None
        dlam = sla.cho_solve(factor, AS @ (c * r_dual) - r_primal)
        lam_s = lam_s + dlam
        if not from_dual:
            w = w + c * (AS.T @ dlam - r_dual)
    if from_dual:
        w = f.conj_grad(AS.T @ lam_s)
    lam = np.zeros(len(A))
    lam[support] = lam_s
    if not np.all(np.isfinite(w)) or lam_s.min() < 0 or (A @ w).min() < 1 - 1e-12:
        return None
    return w, lam


def _solve_lp(A, p, w_l2, lam_l2):
    """(w, λ) of min ‖w‖_p, λ in the norm convention."""
    with np.errstate(over="ignore", invalid="ignore"):  # overshooting trial steps are rejected
        w, lam, slack = _interior_point(A, p, w_l2, lam_l2)
        polished = _polish_lp(A, p, w, lam, slack)
    if polished is not None:
        w, lam = polished
    return w, lam / np.linalg.norm(w, p) ** (p - 1)  # multipliers of ‖w‖_p^p/p → of ‖w‖_p


# ------------------------------------------------------------------------ ℓ1 and conic solvers


def _solve_l1(A, lifted=None):
    """min ‖w‖_1 as an LP for HiGHS: variables (w, r ≥ |w|[, u = C w]), margins ≥ 1."""
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
    return res.x[:D], -res.ineqlin.marginals[2 * D :]


def _cvxpy_problem(A, norm_type, lifted=None):
    """The cvxpy problem min ‖w‖ s.t. A w ≥ 1 (vectorised; lifted through u = C w if given).

    A may be a cp.Parameter (batch solves compile once). Returns (problem, w, margin constraint).
    """
    import cvxpy as cp

    D = A.shape[1]
    w = cp.Variable(D)
    if norm_type == "nuc":
        d = _side(D)
        objective = cp.normNuc(cp.reshape(w, (d, d), order="C"))
    else:
        objective = cp.pnorm(w, norm_type)
    if lifted is None:
        margins = A @ w >= 1
        constraints = [margins]
    else:
        B, C = lifted
        u = cp.Variable(C.shape[0])
        margins = B @ u >= 1
        constraints = [margins, u == C @ w]
    return cp.Problem(cp.Minimize(objective), constraints), w, margins


def _solve_cvxpy(problem, w, margins, A, name_of):
    import cvxpy as cp

    with warnings.catch_warnings():  # accuracy is judged by our own KKT check instead
        warnings.filterwarnings("ignore", "Solution may be inaccurate", UserWarning)
        problem.solve(solver=cp.CLARABEL, **CLARABEL_TOL)
    if problem.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        _raise_infeasible(A, name_of)
    if w.value is None:
        raise RuntimeError(f"Clarabel failed on the max-margin problem: status {problem.status}")
    return np.asarray(w.value, dtype=np.float64), np.asarray(margins.dual_value, dtype=np.float64)


def _conic(A, norm_type, lifted, name_of):
    return _solve_cvxpy(*_cvxpy_problem(A, norm_type, lifted), A, name_of)


# -------------------------------------------------------------------------------- infeasibility


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


def _check_zero_rows(A, name_of):
    lengths = np.linalg.norm(A, axis=1)
    zero = np.flatnonzero(lengths <= ZERO_RTOL * lengths.max())
    if zero.size:
        names = ", ".join(name_of(k) for k in zero[:5])
        raise InfeasibleSVMError(
            f"no w satisfies all margin constraints: the constraint vector of {names} is zero, "
            "so its margin is 0 for every w",
            zero,
        )


# ------------------------------------------------------------------------------- core solver


def _max_margin(A, norm_type, name_of, lifted=None, conic=None):
    """Solve min ‖w‖ s.t. A w ≥ 1; returns (w, λ, status, kkt, seconds, solver)."""
    start = time.perf_counter()
    _check_zero_rows(A, name_of)
    scale = np.linalg.norm(A, axis=1).max()  # solve with unit-scale rows: w → w·scale, λ → λ·scale
    As = A / scale
    if lifted is not None:
        lifted = (lifted[0] / scale, lifted[1])
    w2, lam2, solver = _solve_l2(As, name_of)  # also the feasibility check for every norm
    if norm_type == 2.0:
        w, lam = w2, lam2 / np.linalg.norm(w2)
    elif norm_type == 1.0:
        (w, lam), solver = _solve_l1(As, lifted), "highs"
    elif norm_type == "nuc":
        solve = conic or (lambda As: _conic(As, "nuc", lifted, name_of))
        (w, lam), solver = solve(As), "clarabel"
    else:
        (w, lam), solver = _solve_lp(As, norm_type, w2, lam2), "interior-point"
        if not _kkt_residual(As, w, lam, norm_type) <= KKT_TOL:  # also catches NaN
            (w, lam), solver = _conic(As, norm_type, lifted, name_of), "clarabel"
    w = w / (As @ w).min()  # exact feasibility, never increases the norm of a feasible point
    w, lam = w / scale, lam / scale
    kkt = _kkt_residual(A, w, lam, norm_type)
    status = "optimal" if kkt <= KKT_TOL else "optimal_inaccurate"
    if status != "optimal":
        warnings.warn(
            f"max-margin solution ({solver}, norm {norm_type}) is inaccurate: "
            f"KKT residual {kkt:.1e}",
            RuntimeWarning,
            stacklevel=3,
        )
    return w, lam, status, kkt, time.perf_counter() - start, solver


def _fields(A, norm_type, w, lam, status, kkt, seconds, solver):
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


def max_margin(A, norm=2.0) -> MaxMarginResult:
    """min ‖w‖ s.t. A w ≥ 1 for a constraint matrix A (m, D).

    norm: a number p ≥ 1 (entrywise ℓp), "fro" (= 2) or "nuc" (w = vec(W) row-major, D = d²).
    Raises InfeasibleSVMError if no w satisfies the constraints.
    """
    A = _numpy(as_tensor(A, "A"))
    if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
        raise ValueError(f"A must have shape (m, D) with m, D >= 1, got {A.shape}")
    norm_type = _parse_norm(norm)
    if norm_type == "nuc":
        _side(A.shape[1])
    solution = _max_margin(A, norm_type, lambda k: f"constraint {k}")
    return MaxMarginResult(w=solution[0], **_fields(A, norm_type, *solution))


# ----------------------------------------------------------------------------------- Att-SVM


class _AttProblem:
    """One Att-SVM instance: validated arrays, constraint rows and how to name them."""

    def __init__(self, X, z, alpha):
        self.X, self.z, self.alpha = _att_arrays(X, z, alpha)
        _, T, d = self.X.shape
        if T < 2:
            raise ValueError("X must have T >= 2 tokens: with one token there are no constraints")
        self.diffs, self.pairs = _differences(self.X, self.alpha)
        self.A = np.einsum("itj,ik->itjk", self.diffs, self.z).reshape(-1, d * d)

    def name(self, k: int) -> str:
        i, t = self.pairs[k]
        return f"(sample {i}, token {t})"

    def check_zero_rows(self):
        """A zero constraint row has a reason that can be named: z_i = 0 or a duplicate token."""
        lengths = np.linalg.norm(self.A, axis=1)
        zero = np.flatnonzero(lengths <= ZERO_RTOL * lengths.max())
        if not zero.size:
            return
        reasons = {}  # dict: ordered and one "z_i is zero" per sample
        for i, t in self.pairs[zero]:
            if not self.z[i].any():
                reasons[i, -1] = f"sample {i}: z_{i} is zero"
            else:
                reasons[i, t] = f"sample {i}: token {t} equals the selected token {self.alpha[i]}"
        raise InfeasibleSVMError(
            f"Att-SVM is infeasible: {'; '.join(list(reasons.values())[:5])}, "
            "so the margin is 0 for every W",
            zero,
        )

    def lifted(self):
        """Sparse factors for the conic solvers (ℓ1, nuclear, fallback), worth it for large A."""
        return _att_lifting(self.diffs, self.z) if self.A.size > 20_000 else None

    def result(self, norm_type, solution) -> AttSVMResult:
        d = self.X.shape[2]
        W = solution[0].reshape(d, d)
        return AttSVMResult(W=W, constraints=self.pairs, **_fields(self.A, norm_type, *solution))


def att_svm(X, z, alpha, norm=2.0) -> AttSVMResult:
    """W_mm = argmin ‖W‖ s.t. (x_{i,α_i} − x_{i,t})ᵀ W z_i ≥ 1 for all i and t ≠ α_i.

    X (n, T, d), z (n, d), alpha (n,) token indices (or one int for all samples); norm: p ≥ 1
    (entrywise ℓp), "fro" or "nuc". Raises InfeasibleSVMError naming the reason if no W exists.
    """
    norm_type = _parse_norm(norm)
    problem = _AttProblem(X, z, alpha)
    problem.check_zero_rows()
    solution = _max_margin(problem.A, norm_type, problem.name, problem.lifted())
    return problem.result(norm_type, solution)


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

    ℓp and ℓ2 use the fast in-house solvers per instance; the nuclear-norm problem is compiled
    once by cvxpy with A as a parameter and re-solved for each instance.
    """
    norm_type = _parse_norm(norm)
    Xs, zs, alphas = _batch_items(Xs, "Xs"), _batch_items(zs, "zs"), list(alphas)
    _same_length(Xs=Xs, zs=zs, alphas=alphas)
    problems = [_AttProblem(X, z, a) for X, z, a in zip(Xs, zs, alphas)]
    if len({p.A.shape for p in problems}) > 1:
        raise ValueError("att_svm_batch needs instances of the same shape (n, T, d)")
    conic = _parametric_conic(problems[0].A.shape, norm_type) if problems else None
    results = []
    for problem in problems:
        problem.check_zero_rows()
        solution = _max_margin(problem.A, norm_type, problem.name, conic=conic)
        results.append(problem.result(norm_type, solution))
    return results


def _parametric_conic(shape, norm_type):
    """For "nuc": one compiled cvxpy problem with A as a parameter, re-solved per instance."""
    if norm_type != "nuc":
        return None
    import cvxpy as cp

    A = cp.Parameter(shape)
    compiled = _cvxpy_problem(A, norm_type)

    def solve(As):
        A.value = As
        return _solve_cvxpy(*compiled, As, lambda k: f"constraint {k}")

    return solve


# ---------------------------------------------------------------------------------- head SVM


class _HeadProblem:
    def __init__(self, X, y, alpha):
        X, _, y, _, _ = check_sequences(X, y=y)
        self.X, self.y = _numpy(X), _numpy(y)
        n, T, _ = self.X.shape
        self.alpha = _tokens(alpha, n, T)
        self.A = self.y[:, None] * self.X[np.arange(n), self.alpha]

    @staticmethod
    def name(k: int) -> str:
        return f"sample {k}"

    def check_zero_rows(self):
        lengths = np.linalg.norm(self.A, axis=1)
        zero = np.flatnonzero(lengths <= ZERO_RTOL * lengths.max())
        if zero.size:
            samples = ", ".join(str(i) for i in zero[:5])
            raise InfeasibleSVMError(
                f"head SVM is infeasible: the selected token of sample(s) {samples} is zero, "
                "so the margin y_i vᵀx_(i,α_i) is 0 for every v",
                zero,
            )

    def result(self, norm_type, solution) -> HeadSVMResult:
        return HeadSVMResult(v=solution[0], **_fields(self.A, norm_type, *solution))


def head_svm(X, y, alpha, p=2.0) -> HeadSVMResult:
    """v_mm = argmin ‖v‖_p s.t. y_i vᵀx_{i,α_i} ≥ 1 for all i (p ≥ 1 or "fro")."""
    norm_type = _parse_norm(p, "p", allow_nuc=False)
    problem = _HeadProblem(X, y, alpha)
    problem.check_zero_rows()
    return problem.result(norm_type, _max_margin(problem.A, norm_type, problem.name))


def head_svm_batch(Xs, ys, alphas, p=2.0) -> list[HeadSVMResult]:
    """head_svm for many instances."""
    Xs, ys, alphas = _batch_items(Xs, "Xs"), _batch_items(ys, "ys"), list(alphas)
    _same_length(Xs=Xs, ys=ys, alphas=alphas)
    return [head_svm(X, y, a, p) for X, y, a in zip(Xs, ys, alphas)]
