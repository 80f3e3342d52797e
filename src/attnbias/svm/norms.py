"""The norms ‖w‖ (entrywise ℓp, p ≥ 1, or nuclear of W = w.reshape(d, d)) and the KKT residual."""

from __future__ import annotations

import numpy as np

from .._validate import check_p


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
