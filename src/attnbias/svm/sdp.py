"""The nuclear-norm Att-SVM by a primal-dual interior point method that uses its structure.

Solved through its dual, max 1ᵀλ s.t. ‖G‖_2 ≤ 1, λ ≥ 0 with G = Σ_k λ_k a_k: one LMI
S = I − [[0, G], [Gᵀ, 0]] ⪰ 0 of size 2d in m = n(T−1) variables. Its conic dual is
min tr X s.t. 2⟨a_k, X₁₂⟩ − μ_k = 1, X ⪰ 0, μ ≥ 0, and W = 2 X₁₂ is the nuclear-norm solution
(‖2 X₁₂‖_* ≤ tr X = 1ᵀλ at the optimum), λ its multipliers in the norm convention.

Every Att-SVM row is rank one, a_k = u_k v_kᵀ (u = x_{i,α_i} − x_{i,t}, v = z_i), so the m × m
Schur complement of the HKM direction is four Hadamard products of m × m matrices formed by
(m × d)(d × d)(d × m) products: O(m² d) per iteration instead of the O((2d)⁶) of a generic
conic solver's dense PSD block. Unverified: the caller checks the KKT conditions.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla


def _blocks(Y: np.ndarray, d: int):
    return Y[:d, :d], Y[:d, d:], Y[d:, :d], Y[d:, d:]


def _schur(U, V, X, R, d):
    """M_kl = tr(F_k X F_l R) for F_k = [[0, a_k], [a_kᵀ, 0]], a_k = u_k v_kᵀ."""
    X11, _, X21, X22 = _blocks(X, d)
    R11, R12, _, R22 = _blocks(R, d)
    cross = (V @ X21 @ U.T) * (U @ R12 @ V.T)
    return cross + cross.T + (V @ X22 @ V.T) * (U @ R11 @ U.T) + (U @ X11 @ U.T) * (V @ R22 @ V.T)


def _psd_step(Y: np.ndarray, dY: np.ndarray) -> float:
    """The largest α ≤ 1 with Y + α dY ⪰ 0 (Y ≻ 0)."""
    L = np.linalg.cholesky(Y)
    Linv_dY = sla.solve_triangular(L, dY, lower=True)
    smallest = np.linalg.eigvalsh(sla.solve_triangular(L, Linv_dY.T, lower=True)).min()
    return 1.0 if smallest >= -1.0 else -1.0 / smallest


def _vec_step(y: np.ndarray, dy: np.ndarray) -> float:
    shrinking = dy < 0
    return min(1.0, (-y[shrinking] / dy[shrinking]).min()) if shrinking.any() else 1.0


class _Lmi:
    """G(λ) = Σ_k λ_k u_k v_kᵀ and S(λ) = I − [[0, G], [Gᵀ, 0]]."""

    def __init__(self, U, V):
        self.U, self.V = U, V
        self.d = U.shape[1]

    def lift(self, lam):
        G = self.U.T @ (lam[:, None] * self.V)
        zero = np.zeros((self.d, self.d))
        return np.block([[zero, G], [G.T, zero]])

    def adjoint(self, Y):
        """⟨F_k, Y⟩ = 2 u_kᵀ Y₁₂ v_k for every k."""
        return 2 * np.einsum("kj,jl,kl->k", self.U, Y[: self.d, self.d :], self.V)


def _step(lmi, X, S, lam, mu):
    """One predictor-corrector HKM step: the next (X, S, λ, μ)."""
    m, d = len(lam), lmi.d
    R = np.linalg.inv(S)
    R = (R + R.T) / 2
    nu = (np.sum(X * S) + mu @ lam) / (2 * d + m)
    M = _schur(lmi.U, lmi.V, X, R, d)
    M[np.diag_indices(m)] += mu / lam
    factor = sla.cho_factor(M, check_finite=False)
    AR = lmi.adjoint(R)

    def direction(sigma_nu):
        # (M + diag(μ/λ)) Δλ = 1 − σν 𝒜*(S⁻¹) + σν/λ: the primal equation 𝒜*(X) − μ = 1
        # after a full step, with ΔS = −𝒜(Δλ), ΔX = σν S⁻¹ − X − X ΔS S⁻¹ (symmetrised)
        dlam = sla.cho_solve(factor, 1.0 - sigma_nu * AR + sigma_nu / lam)
        dS = -lmi.lift(dlam)
        dX = sigma_nu * R - X - X @ dS @ R
        dmu = sigma_nu / lam - mu - mu / lam * dlam
        return dlam, dS, (dX + dX.T) / 2, dmu

    def steps(dlam, dS, dX, dmu):
        return (
            min(_psd_step(X, dX), _vec_step(mu, dmu)),
            min(_psd_step(S, dS), _vec_step(lam, dlam)),
        )

    primal_step, dual_step = steps(*direction(0.0))  # the affine predictor sets the centring
    sigma = max(min(1.0, (1 - min(primal_step, dual_step)) ** 3), 1e-3)
    dlam, dS, dX, dmu = direction(sigma * nu)
    primal_step, dual_step = (0.98 * step for step in steps(dlam, dS, dX, dmu))
    lam = lam + dual_step * dlam
    return X + primal_step * dX, np.eye(2 * d) - lmi.lift(lam), lam, mu + primal_step * dmu


def solve_nuclear(U, V, tol=1e-9, max_iter=80):
    """(w, λ) of min ‖W‖_* s.t. u_kᵀ W v_k ≥ 1 (w = vec(W) row-major), λ in the norm
    convention; U, V (m, d) hold the rank-one factors of the rows. Stops at relative gap and
    infeasibility tol, or where float64 runs out (a singular Schur complement)."""
    m, d = U.shape
    lmi = _Lmi(U, V)
    lam = np.full(m, 0.5 / np.linalg.norm(lmi.lift(np.ones(m)), 2))  # ‖G‖_2 = ½: S ≻ 0
    S = np.eye(2 * d) - lmi.lift(lam)
    X, mu = np.eye(2 * d), np.ones(m)
    for _ in range(max_iter):
        value = lam.sum()
        gap = np.sum(X * S) + mu @ lam
        infeasibility = np.abs(lmi.adjoint(X) - mu - 1.0).max()
        if gap <= tol * value and infeasibility <= tol:
            break
        try:
            X, S, lam, mu = _step(lmi, X, S, lam, mu)
        except np.linalg.LinAlgError:
            break
    return (2 * X[:d, d:]).ravel(), lam
