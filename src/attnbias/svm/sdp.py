"""The nuclear- and spectral-norm Att-SVMs by one primal-dual interior point that uses their
structure.

Both are stated as   max bᵀy  s.t.  S = C − 𝒜(y) ⪰ 0 (one LMI of size 2d),  z = G y − h ≥ 0,
whose conic dual is  min ⟨C, X⟩ − hᵀμ  s.t.  𝒜*(X) − Gᵀμ = b,  X ⪰ 0, μ ≥ 0.

- Nuclear, through its dual: y = λ (m = n(T−1)), max 1ᵀλ s.t. ‖Σ_k λ_k a_k‖_2 ≤ 1, λ ≥ 0. The
  nuclear-norm solution is W = 2 X₁₂ (‖2 X₁₂‖_* ≤ tr X = 1ᵀλ at the optimum).
- Spectral, directly: y = (W, s), max −s s.t. [[sI, W], [Wᵀ, sI]] ⪰ 0, u_kᵀ W v_k ≥ 1. Its
  multipliers μ satisfy ‖Σ_k μ_k a_k‖_* = ‖2 X₁₂‖_* ≤ tr X = 1, 1ᵀμ = s: the norm convention.

Every Att-SVM row is rank one, a_k = u_k v_kᵀ (u = x_{i,α_i} − x_{i,t}, v = z_i). The HKM Schur
complement M = 𝒜*(X 𝒜(·) S⁻¹) + Gᵀ diag(μ/z) G is then formed from products of d × d blocks:
Hadamard products of m × m matrices (nuclear, O(m² d)) or Kronecker products of d × d ones
grouped by query (spectral, O(n d⁴)), instead of a generic conic solver's dense (2d)⁶ PSD block.
The iterates y stay strictly feasible; X, μ start infeasible. Mehrotra's predictor-corrector.
Unverified: the caller checks the KKT conditions.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .cholesky import cholesky, solve_factored


def _blocks(Y: np.ndarray, d: int):
    return Y[:d, :d], Y[:d, d:], Y[d:, :d], Y[d:, d:]


def _off_diagonal(G: np.ndarray) -> np.ndarray:
    """[[0, G], [Gᵀ, 0]]."""
    zero = np.zeros_like(G)
    return np.block([[zero, G], [G.T, zero]])


def _psd_step(Y: np.ndarray, dY: np.ndarray) -> float:
    """The largest α ≤ 1 with Y + α dY ⪰ 0 (Y ≻ 0)."""
    L = np.linalg.cholesky(Y)
    Linv_dY = sla.solve_triangular(L, dY, lower=True)
    smallest = np.linalg.eigvalsh(sla.solve_triangular(L, Linv_dY.T, lower=True)).min()
    return 1.0 if smallest >= -1.0 else -1.0 / smallest


def _vec_step(y: np.ndarray, dy: np.ndarray) -> float:
    shrinking = dy < 0
    return min(1.0, (-y[shrinking] / dy[shrinking]).min()) if shrinking.any() else 1.0


class _NuclearDual:
    """y = λ: C = I, 𝒜(λ) = [[0, Σ_k λ_k u_k v_kᵀ], [·ᵀ, 0]], z = λ (G = I, h = 0)."""

    def __init__(self, U, V):
        self.U, self.V = U, V
        self.d = U.shape[1]
        self.b = np.ones(len(U))
        self.C = np.eye(2 * self.d)
        self.h = 0.0

    def lift(self, lam):
        return _off_diagonal(self.U.T @ (lam[:, None] * self.V))

    def adjoint(self, Y):
        """⟨F_k, Y⟩ = 2 u_kᵀ Y₁₂ v_k for every k."""
        return 2 * np.einsum("kj,jl,kl->k", self.U, Y[: self.d, self.d :], self.V)

    def schur(self, X, R):
        """M_kl = tr(F_k X F_l R)."""
        U, V = self.U, self.V
        X11, _, X21, X22 = _blocks(X, self.d)
        R11, R12, _, R22 = _blocks(R, self.d)
        cross = (V @ X21 @ U.T) * (U @ R12 @ V.T)
        return (
            cross + cross.T + (V @ X22 @ V.T) * (U @ R11 @ U.T) + (U @ X11 @ U.T) * (V @ R22 @ V.T)
        )

    def G(self, lam):
        return lam

    def Gt(self, v):
        return v

    def add_linear_schur(self, M, D):
        M[np.diag_indices(len(D))] += D

    def start(self):
        lam = np.full(len(self.U), 0.5 / np.linalg.norm(self.U.T @ self.V, 2))  # ‖G‖_2 = ½
        return lam, np.eye(2 * self.d), np.ones(len(self.U))

    def solution(self, y, X, mu):
        return (2 * X[: self.d, self.d :]).ravel(), y


class _SpectralPrimal:
    """y = (vec W, s): C = 0, 𝒜(y) = −(s I + [[0, W], [Wᵀ, 0]]), z = A vec W − 1."""

    def __init__(self, U, V, w_feasible):
        self.U, self.V = U, V
        self.d = d = U.shape[1]
        self.b = np.zeros(d * d + 1)
        self.b[-1] = -1.0
        self.C = np.zeros((2 * d, 2 * d))
        self.h = 1.0
        self.w_feasible = w_feasible
        # rows grouped by their query v: Σ_k D_k a_k a_kᵀ = Σ_v (Σ_{k: v} D_k u_k u_kᵀ) ⊗ v vᵀ;
        # row k of `spread` holds u_k in the d columns of its query's block
        self.queries, group = np.unique(V, axis=0, return_inverse=True)
        m = len(U)
        columns = group.reshape(-1, 1) * d + np.arange(d)
        self.spread = sp.csr_matrix(
            (U.ravel(), (np.repeat(np.arange(m), d), columns.ravel())), (m, len(self.queries) * d)
        )
        self.schur_buffer = np.empty((d * d + 1, d * d + 1))
        self.term_buffer = np.empty((d, d, d, d))

    def lift(self, y):
        d = self.d
        return -(y[-1] * np.eye(2 * d) + _off_diagonal(y[:-1].reshape(d, d)))

    def adjoint(self, Y):
        d = self.d
        return -np.append(2 * Y[:d, d:].ravel(), np.trace(Y))

    def schur(self, X, R):
        """M_ij = tr(F_i X F_j R) for F_(a,b) = E_{a,d+b} + E_{d+b,a} and F_s = I."""
        d = self.d
        X11, X12, X21, X22 = _blocks(X, d)
        R11, R12, R21, R22 = _blocks(R, d)
        M = self.schur_buffer  # reused: a fresh 8 MB array costs page faults every iteration
        WW = M[:-1, :-1].reshape(d, d, d, d)  # a view, indexed (a, b, c, e)
        # X11_ac R22_be + R11_ac X22_be + X21_bc R21_ea + X12_ae R12_cb, by broadcasting
        term = self.term_buffer
        np.multiply(X11[:, None, :, None], R22[None, :, None, :], out=WW)
        for left, right in (
            (R11[:, None, :, None], X22[None, :, None, :]),
            (R21.T[:, None, None, :], X21[None, :, :, None]),
            (X12[:, None, None, :], R12.T[None, :, :, None]),
        ):
            WW += np.multiply(left, right, out=term)
        RX = R @ X
        M[:-1, -1] = M[-1, :-1] = (RX[d:, :d].T + RX[:d, d:]).ravel()  # tr(F_(a,b) X R)
        M[-1, -1] = np.sum(X * R.T)
        return M

    def G(self, y):
        W = y[:-1].reshape(self.d, self.d)
        return np.sum((self.U @ W) * self.V, axis=1)

    def Gt(self, v):
        return np.append((self.U.T @ (v[:, None] * self.V)).ravel(), 0.0)

    def add_linear_schur(self, M, D):
        """M += Σ_k D_k vec(a_k) vec(a_k)ᵀ = Σ_v (Σ_{k: v} D_k u_k u_kᵀ) ⊗ v vᵀ, the rows grouped
        by query v, as one batched product that lands in M's (a, b), (c, e) layout."""
        d = self.d
        weighted = (self.spread.T @ (D[:, None] * self.U)).reshape(-1, d, d)  # (v, a, c)
        per_a = np.einsum("gac,ge->agce", weighted, self.queries).reshape(d, -1, d * d)
        M[:-1, :-1] += np.matmul(self.queries.T, per_a).reshape(d * d, d * d)

    def start(self):
        d = self.d
        W = 2.0 * self.w_feasible.reshape(d, d)  # margins ≥ 2: z ≥ 1
        s = 2.0 * np.linalg.norm(W, 2)
        return np.append(W.ravel(), s), np.eye(2 * d) / (2 * d), np.ones(len(self.U)) / len(self.U)

    def solution(self, y, X, mu):
        return y[:-1].copy(), mu


def _step(problem, X, y, mu, S, z):
    """One Mehrotra predictor-corrector HKM step from (X, y, μ) with S = C − 𝒜(y), z = Gy − h:
    the next (X, y, μ)."""
    R = np.linalg.inv(S)
    R = (R + R.T) / 2
    nu = (np.sum(X * S) + mu @ z) / (len(S) + len(z))
    M = problem.schur(X, R)
    problem.add_linear_schur(M, mu / z)
    factor = cholesky(M)
    AR, Gz = problem.adjoint(R), problem.Gt(1.0 / z)

    def direction(sigma_nu, corrector=None):
        # (M + Gᵀ diag(μ/z) G) Δy = b − σν 𝒜*(S⁻¹) + σν Gᵀ(1/z) [+ Mehrotra's second-order
        # terms]; then ΔS = −𝒜(Δy), ΔX = σν S⁻¹ − X − X ΔS S⁻¹ (symmetrised), Δμ likewise
        rhs = problem.b - sigma_nu * AR + sigma_nu * Gz
        dX_extra, dmu_extra = 0.0, 0.0
        if corrector is not None:
            dX0, dS0, dz0, dmu0 = corrector
            dX_extra, dmu_extra = dX0 @ dS0 @ R, dmu0 * dz0 / z
            rhs = rhs + problem.adjoint((dX_extra + dX_extra.T) / 2)
            rhs = rhs - problem.Gt(dmu_extra)
        dy = solve_factored(factor, rhs)
        dS, dz = -problem.lift(dy), problem.G(dy)
        dX = sigma_nu * R - X - X @ dS @ R - dX_extra
        dmu = (sigma_nu - mu * dz) / z - mu - dmu_extra
        return dy, dS, (dX + dX.T) / 2, dz, dmu

    def steps(dy, dS, dX, dz, dmu):
        return (
            min(_psd_step(X, dX), _vec_step(mu, dmu)),
            min(_psd_step(S, dS), _vec_step(z, dz)),
        )

    dy, dS, dX, dz, dmu = direction(0.0)  # the affine predictor
    primal_step, dual_step = steps(dy, dS, dX, dz, dmu)
    affine_gap = np.sum((X + primal_step * dX) * (S + dual_step * dS)) + (
        mu + primal_step * dmu
    ) @ (z + dual_step * dz)
    sigma = min(1.0, max((affine_gap / (nu * (len(S) + len(z)))) ** 3, 1e-6))
    dy, dS, dX, dz, dmu = direction(sigma * nu, (dX, dS, dz, dmu))
    primal_step, dual_step = (0.98 * step for step in steps(dy, dS, dX, dz, dmu))
    return X + primal_step * dX, y + dual_step * dy, mu + primal_step * dmu


def _interior_point(problem, tol, max_iter, patience=2):
    """(w, λ) at relative gap and infeasibility tol; past that float64 runs out (the Schur
    complement grows singular and X's infeasibility creeps back), so the best iterate by
    max(relative gap, infeasibility) is kept and the loop ends after `patience` steps without
    improvement."""
    y, X, mu = problem.start()
    best, since_best = (np.inf, y, X, mu), 0
    for _ in range(max_iter):
        S, z = problem.C - problem.lift(y), problem.G(y) - problem.h
        gap = (np.sum(X * S) + mu @ z) / abs(problem.b @ y)
        infeasibility = np.abs(problem.adjoint(X) - problem.Gt(mu) - problem.b).max()
        merit = max(gap, infeasibility)
        if merit < best[0]:
            best, since_best = (merit, y, X, mu), 0
        else:
            since_best += 1
        if merit <= tol or since_best >= patience:
            break
        try:
            X, y, mu = _step(problem, X, y, mu, S, z)
        except np.linalg.LinAlgError:
            break
    return problem.solution(*best[1:])


def solve_nuclear(U, V, tol=1e-8, max_iter=80):
    """(w, λ) of min ‖W‖_* s.t. u_kᵀ W v_k ≥ 1 (w = vec(W) row-major), λ in the norm
    convention; U, V (m, d) hold the rank-one factors of the rows."""
    return _interior_point(_NuclearDual(U, V), tol, max_iter)


def solve_spectral(U, V, w_feasible, tol=1e-8, max_iter=80):
    """(w, λ) of min ‖W‖_2 s.t. u_kᵀ W v_k ≥ 1, started from any w_feasible with margins ≥ 1
    (the ℓ2 solution)."""
    return _interior_point(_SpectralPrimal(U, V, w_feasible), tol, max_iter)
