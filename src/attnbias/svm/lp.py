"""The ℓp solver, 1 < p < ∞: a primal-dual interior point method on min ‖w‖_p^p / p s.t. Aw ≥ 1,
then Newton's method on the KKT equations of the support (exact to rounding).

The powers |w|^(p−1) and |u|^(q−1) over/underflow for p near 1 and large p unless w is near unit
scale, so the problem is rescaled to ‖w_ℓ2‖_p = 1 first; where that is not enough the solver
returns a non-finite or unverifiable answer and the caller falls back to Clarabel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..norms import dual_exponent, lp_norm
from .cholesky import cholesky, gram, solve_factored


class _Lp:
    """f(w) = ‖w‖_p^p / p, its conjugate's gradient and inverse Hessian (1 < p < ∞)."""

    def __init__(self, p: float):
        self.p, self.q = p, dual_exponent(p)

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
        K = gram(A, c)
        K[np.diag_indices(m)] += slack / lam
        factor = cholesky(K)
        shift = A @ (c * r_dual) - r_primal

        def direction(r_comp):
            dlam = solve_factored(factor, r_comp / lam + shift)
            dw = c * (A.T @ dlam - r_dual)
            return dw, A @ dw + r_primal, dlam

        return direction
    M = gram(A.T, lam / slack)  # (C⁻¹ + Aᵀ(Λ/S)A) Δw = −r_dual + Aᵀ((r_comp − λ r_primal)/s)
    M[np.diag_indices(D)] += 1 / c
    factor = cholesky(M)

    def direction(r_comp):
        dw = solve_factored(factor, A.T @ ((r_comp - lam * r_primal) / slack) - r_dual)
        ds = A @ dw + r_primal
        return dw, ds, (r_comp - lam * ds) / slack

    return direction


def _step_to_boundary(x: np.ndarray, dx: np.ndarray) -> float:
    shrinking = dx < 0
    return min(1.0, (-x[shrinking] / dx[shrinking]).min()) if shrinking.any() else 1.0


def _p_norm_interior_point(A, p, w_l2, lam_l2, tol=1e-8, max_iter=100):
    """min ‖w‖_p^p / p s.t. Aw − s = 1, s ≥ 0 by primal-dual path following (Mehrotra σ).

    For p < 2 the dual map λ ↦ w = ∇f*(Aᵀλ) is the smooth one, so w is derived from λ; for p > 2
    w is iterated. Returns (w, λ, s) with λ the multipliers of ‖w‖_p^p / p.
    """
    f = _Lp(p)
    m = A.shape[0]
    from_dual = p < 2
    if from_dual:  # λ along the ℓ2 multipliers, scaled to maximise the dual on that ray
        lam = lam_l2 + 0.1 * lam_l2.mean()
        # × (1ᵀλ / ‖Aᵀλ‖_q^q)^(1/(q−1)), with the power of the norm taken apart (scale-safe)
        lam *= lam.sum() ** (1 / (f.q - 1)) * float(lp_norm(A.T @ lam, f.q)) ** (-f.q / (f.q - 1))
        w = f.conj_grad(A.T @ lam)
        slack = np.maximum(A @ w - 1, 1.0)
    else:  # strictly feasible start from the ℓ2 solution
        w = 1.5 * w_l2
        slack = A @ w - 1
        lam = np.sum(np.abs(w) ** p) / m / slack
    point = _Point.at(A, f, w, slack, lam)
    for _ in range(max_iter):
        w, slack, lam, grad = point.w, point.slack, point.lam, point.grad
        if (
            np.abs(point.r_dual).max() <= tol * np.abs(grad).max()
            and np.abs(point.r_primal).max() <= tol
            and slack @ lam <= tol * (w @ grad)
        ):
            break
        found = _interior_point_step(A, f, from_dual, point)
        if found is None:
            break
        point = found
    return point.w, point.lam, point.slack


@dataclass(frozen=True, eq=False)
class _Point:
    """An iterate (w, s, λ) with ∇f(w) and its residuals ∇f(w) − Aᵀλ and Aw − 1 − s, each
    computed once: the convergence test, the Newton system and the merit of a trial step all
    read them."""

    w: np.ndarray
    slack: np.ndarray
    lam: np.ndarray
    grad: np.ndarray
    r_dual: np.ndarray
    r_primal: np.ndarray

    @classmethod
    def at(cls, A, f, w, slack, lam) -> _Point:
        grad = f.grad(w)
        return cls(w, slack, lam, grad, grad - A.T @ lam, A @ w - 1 - slack)


def _interior_point_step(A, f, from_dual, point: _Point) -> _Point | None:
    """One Newton step towards s∘λ = σμ; the next point, or None if it makes no progress."""
    w, slack, lam = point.w, point.slack, point.lam
    try:
        direction = _newton_system(A, f.inv_hess(w), lam, slack, point.r_dual, point.r_primal)
    except np.linalg.LinAlgError:
        return None

    def boundary(ds, dlam):  # largest step keeping s, λ > 0
        return min(_step_to_boundary(slack, ds), _step_to_boundary(lam, dlam))

    def residual(at: _Point):
        return np.linalg.norm(np.concatenate([at.r_dual, at.r_primal, at.slack * at.lam - target]))

    def trial(dw, ds, dlam, step):
        lam1, slack1 = lam + step * dlam, slack + step * ds
        w1 = f.conj_grad(A.T @ lam1) if from_dual else w + step * dw
        moved = _Point.at(A, f, w1, slack1, lam1)
        return residual(moved) <= (1 - 1e-4 * step) * merit, moved

    mu = slack @ lam / len(lam)
    _, ds, dlam = direction(-slack * lam)  # the affine predictor sets the centring σ
    step = boundary(ds, dlam)
    target = min(((slack + step * ds) @ (lam + step * dlam) / len(lam) / mu) ** 3, 1.0) * mu
    merit = residual(point)
    # Mehrotra's corrector if it reduces the residual, else a damped centred Newton step
    mehrotra = direction(target - slack * lam - ds * dlam)
    ok, moved = trial(*mehrotra, 0.99 * boundary(*mehrotra[1:]))
    if ok:
        return moved
    centred = direction(target - slack * lam)
    step = 0.99 * boundary(*centred[1:])
    for _ in range(40):
        ok, moved = trial(*centred, step)
        if ok:
            return moved
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
            factor = cholesky(gram(AS, c))
        except np.linalg.LinAlgError:
            return None
        dlam = solve_factored(factor, AS @ (c * r_dual) - r_primal)
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


def solve_lp(A, p, w_l2, lam_l2):
    """(w, λ) of min ‖w‖_p, λ in the norm convention; unverified (the caller checks the KKT).

    Solved for w' = w/κ with κ = ‖w_ℓ2‖_p (so ‖w'‖_p ≤ 1 at the optimum) on A' = κA, whose
    ½‖w‖² multipliers are λ_ℓ2/κ²; the multipliers of A' are κ times those of A.
    """
    kappa = float(lp_norm(w_l2, p))
    As, w_l2, lam_l2 = A * kappa, w_l2 / kappa, lam_l2 / kappa**2
    with np.errstate(all="ignore"):  # overshooting trial steps are rejected, failures verified
        w, lam, slack = _p_norm_interior_point(As, p, w_l2, lam_l2)
        polished = _polish_lp(As, p, w, lam, slack)
        if polished is not None:
            w, lam = polished
        # multipliers of ‖w‖_p^p/p → of ‖w‖_p: λ / ‖w‖_p^(p−1), and back to A: λ κ, w κ
        return w * kappa, lam * (kappa * float(lp_norm(w, p)) ** (1 - p))
