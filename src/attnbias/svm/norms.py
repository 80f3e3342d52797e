"""The norms ‖w‖ (entrywise ℓp, 1 ≤ p ≤ ∞; nuclear or spectral of W = w.reshape(d, d)), their
duals and the KKT residual that verifies every solution, whichever solver produced it.

All of it is scale-safe (ℓp norms are `norms.lp_norm`'s, which divides by the largest entry
before raising to the power p, so p = 1000 neither overflows nor underflows) and NaN-propagating
(np.max over arrays, never Python's max, which drops a NaN depending on its position): any NaN in
w or λ makes the residual NaN.
"""

from __future__ import annotations

import numpy as np

from ..metrics import Norm, parse_norm
from ..norm_names import MATRIX_NORMS
from ..norms import dual_exponent, lp_norm
from .matrix_norms import MATRIX_NORM_SOLVERS

__all__ = ["MATRIX_NORMS", "dual_exponent", "kkt_residual", "norm_value", "parse_norm"]


def square_side(D: int, norm_type="nuc") -> int:
    d = round(np.sqrt(D))
    if d * d != D:
        raise ValueError(f"the {norm_type} norm needs a square W: A must have d*d columns, got {D}")
    return d


def norm_value(w: np.ndarray, norm_type) -> float:
    if norm_type in MATRIX_NORMS:
        if not np.all(np.isfinite(w)):  # the SVD does not converge on NaN
            return np.nan
        singular = np.linalg.svd(w.reshape(square_side(w.size), -1), compute_uv=False)
        return MATRIX_NORM_SOLVERS[norm_type].value(singular)
    return float(lp_norm(w, norm_type))


def dual_norm_value(g: np.ndarray, norm_type) -> float:
    """‖g‖_*: ℓq for ℓp, spectral for nuclear and nuclear for spectral (`metrics.Norm.dual`)."""
    return norm_value(g, Norm(norm_type).dual.value)


def kkt_residual(A: np.ndarray, w: np.ndarray, lam: np.ndarray, norm_type) -> float:
    """The largest violation of the KKT conditions of min ‖w‖ s.t. Aw ≥ 1, dimensionless.

    Conditions (norm convention, G = Aᵀλ): Aw ≥ 1; λ ≥ 0; λᵀ(Aw − 1) = 0; G ∈ ∂‖w‖, i.e.
    ‖G‖_* ≤ 1 and ⟨G, w⟩ = ‖w‖ (one form for every norm, and the one that stays well conditioned
    for p near 1 and p large). A residual ε certifies the objective: λ / max(1, ‖G‖_*) is dual
    feasible, so ‖w‖ ≤ ‖w_mm‖ (1 + O(ε)). NaN or inf anywhere gives a NaN or inf residual.
    """
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(lam))):
        return np.nan
    values = A @ w
    norm = norm_value(w, norm_type)
    if not norm > 0:
        return np.inf
    G = A.T @ lam
    violations = np.array(
        [
            1.0 - np.min(values),  # primal feasibility
            -np.min(lam) / norm,  # λ has the units of ‖w‖ (1ᵀλ = ‖w‖)
            np.sum(np.abs(lam * (values - 1.0))) / norm,  # complementary slackness
            dual_norm_value(G, norm_type) - 1.0,  # dual feasibility
            abs(G @ w / norm - 1.0),  # G is a subgradient: ⟨G, w⟩ = ‖w‖
        ]
    )
    return float(np.max(np.maximum(violations, 0.0)))
