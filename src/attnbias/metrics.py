"""Quantities measured along a run (docs/theory.md#metrics).

Each takes torch tensors or numpy arrays and reduces over the entry dimensions `dim`
(the last two by default, for W; pass dim=-1 for a head v); leading dimensions are a batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ._validate import check_scalar
from .model import attention_logits, attention_scores
from .norm_names import (
    DUAL_MATRIX_NORMS,
    MATRIX_NORM_ORDS,
    MATRIX_NORMS,
    NAMED_NORMS,
    allowed_norms,
    meaning,
)
from .norms import dual_exponent, lp_norm, mirror_map

MATRIX = (-2, -1)


def _t(x) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x, dtype=torch.float64)


def nuclear_norm(W) -> torch.Tensor:
    """‖W‖_* , the sum of the singular values of W (..., d, d'), shape (...); an array is read
    as float64."""
    return torch.linalg.matrix_norm(_t(W), ord="nuc")


def _unit(W, p: float, dim) -> torch.Tensor:
    norm = lp_norm(W, p, dim)
    norm = norm.reshape(*norm.shape, *([1] * (W.dim() - norm.dim())))  # the reduced dims
    return W / torch.where(norm > 0, norm, torch.ones_like(norm))


def alignment(W, W_ref, dim=MATRIX) -> torch.Tensor:
    """Cosine ⟨W, W_ref⟩ / (‖W‖_F ‖W_ref‖_F); 0 when either is zero."""
    W, W_ref = _t(W), _t(W_ref)
    return (_unit(W, 2.0, dim) * _unit(W_ref, 2.0, dim)).sum(dim)


def directional_bregman(W_ref, W, p: float, dim=MATRIX) -> torch.Tensor:
    """D_ψ(Ŵ_ref, Ŵ) with Ŵ = W/‖W‖_p and ψ = (1/p)‖·‖_p^p:

    D_ψ(a, b) = (1/p)‖a‖_p^p + ((p−1)/p)‖b‖_p^p − ⟨sign(b)|b|^{p−1}, a⟩  (≥ 0, = 0 iff a = b).
    """
    a, b = _unit(_t(W_ref), p, dim), _unit(_t(W), p, dim)
    psi_a = lp_norm(a, p, dim) ** p / p
    psi_b = lp_norm(b, p, dim) ** p * (p - 1.0) / p
    return psi_a + psi_b - (mirror_map(b, p) * a).sum(dim)


def _selected_logit(logits: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    return logits.gather(-1, alpha.expand(logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)


def margins(W, X, z, alpha) -> torch.Tensor:
    """(x_{i,α_i} − x_{i,t})ᵀ W z_i for every i, t, with +inf at t = α_i; shape (..., n, T)."""
    return logit_margins(attention_logits(_t(W), _t(X), _t(z)), alpha)


def logit_margins(logits: torch.Tensor, alpha) -> torch.Tensor:
    """`margins` from the attention logits a (..., n, T): a_{i,α_i} − a_{i,t}, +inf at α_i."""
    alpha = torch.as_tensor(alpha, dtype=torch.long)
    gap = _selected_logit(logits, alpha).unsqueeze(-1) - logits
    is_alpha = torch.nn.functional.one_hot(alpha, logits.shape[-1]).bool().expand(gap.shape)
    return gap.masked_fill(is_alpha, float("inf"))


def least_margin(logits: torch.Tensor, alpha) -> torch.Tensor:
    """min_{i, t≠α_i} (a_{i,α_i} − a_{i,t}) from the attention logits a: W's margin, not yet
    normalised (`normalized_margin`, `margin_gap` divide it by a norm of W)."""
    return logit_margins(logits, alpha).amin(dim=(-2, -1))


def normalized_margin(W, X, z, alpha, p: float = 2.0) -> torch.Tensor:
    """min_{i, t≠α_i} (x_{i,α_i} − x_{i,t})ᵀ W z_i / ‖W‖_p (Frobenius by default)."""
    W = _t(W)
    return least_margin(attention_logits(W, _t(X), _t(z)), alpha) / lp_norm(W, p, MATRIX)


def token_score(W, X, z, alpha) -> torch.Tensor:
    """(1/n) Σ_i s_{i,α_i}: mean softmax mass on the chosen tokens."""
    return selected_score(attention_scores(_t(W), _t(X), _t(z)), alpha)


def selected_score(scores: torch.Tensor, alpha) -> torch.Tensor:
    """`token_score` from the attention scores s (..., n, T): (1/n) Σ_i s_{i,α_i}."""
    return _selected_logit(scores, torch.as_tensor(alpha, dtype=torch.long)).mean(-1)


# ------------------------------------------------------------------- norms of W and margin gap


def parse_norm(norm, name: str = "norm", allow_matrix: bool = True) -> float | str:
    """The one reading of a norm's name: a number p >= 1 or float("inf") (entrywise ℓp; "fro"
    means 2, "inf" and "max" mean ∞), or the matrix norms "nuc" and "spectral" (largest singular
    value) unless allow_matrix is False (for a vector); the names are `norm_names.NAMED_NORMS`."""
    allowed = allowed_norms(allow_matrix)
    if isinstance(norm, str):
        parsed = NAMED_NORMS.get(norm.lower())
        if parsed in MATRIX_NORMS and not allow_matrix:
            raise ValueError(
                f"{name}={norm!r} is a norm of a matrix, but it measures a vector here: "
                f"use {allowed}"
            )
        if parsed is None:
            raise ValueError(f"{name} must be {allowed}, got {norm!r}")
        return parsed
    return check_scalar(norm, name, low=1.0, allow_inf=True)


@dataclass(frozen=True)
class Norm:
    """A norm read once from its name (`parse_norm`) and carried as a value: `value` is p (a
    float, ∞ included) for an entrywise ℓp norm, or "nuc" / "spectral"."""

    value: float | str

    @classmethod
    def parse(cls, norm, name: str = "norm", allow_matrix: bool = True) -> Norm:
        """The norm a name, a number or a Norm stands for; ValueError / TypeError as
        `parse_norm`."""
        if isinstance(norm, Norm):
            return norm
        return cls(parse_norm(norm, name, allow_matrix))

    @property
    def is_lp(self) -> bool:
        """An entrywise ℓp norm, 1 ≤ p ≤ ∞; False for "nuc" and "spectral"."""
        return not isinstance(self.value, str)

    @property
    def p(self) -> float:
        """The exponent of an ℓp norm (ValueError for a matrix norm)."""
        if not self.is_lp:
            raise ValueError(f"the {self.value} norm has no exponent p")
        return float(self.value)

    @property
    def dual(self) -> Norm:
        """The dual norm: ℓq for ℓp (1/p + 1/q = 1), spectral for nuclear and nuclear for
        spectral."""
        if self.is_lp:
            return Norm(dual_exponent(self.p))
        return Norm(DUAL_MATRIX_NORMS[self.value])

    @property
    def meaning(self) -> str:
        """What it is, in words: "entrywise ℓ2 = Frobenius", "nuclear: sum of singular
        values" (`norm_names.meaning`)."""
        return meaning(self.p if self.is_lp else self.value)

    @property
    def label(self) -> str:
        """How metrics and files name it: "2" (also for "fro"), "1.75", "inf" (also for
        "max"), "nuc", "spectral"."""
        return self.value if isinstance(self.value, str) else f"{self.value:g}"

    def __str__(self) -> str:
        return self.label


def matrix_norm(W, norm) -> torch.Tensor:
    """‖W‖ over the last two dimensions: entrywise ℓp (p ≥ 1, ∞; scale-safe, `lp_norm`) or the
    nuclear / spectral norm (singular values). NaN for a W holding a NaN, ∞ for one holding ±∞
    (and no NaN)."""
    norm, W = parse_norm(norm), _t(W)
    if norm not in MATRIX_NORMS:
        return lp_norm(W, norm, MATRIX)
    finite = torch.isfinite(W).all(-1).all(-1)
    # the SVD does not converge on non-finite entries: those matrices get the reduction's answer
    safe = torch.where(finite[..., None, None], W, torch.zeros_like(W))
    value = torch.linalg.matrix_norm(safe, ord=MATRIX_NORM_ORDS[norm])
    return torch.where(finite, value, W.abs().amax(MATRIX) * math.inf)


def margin_gap(W, X, z, alpha, norm, optimum) -> torch.Tensor:
    """1 − γ_N(W) / γ*_N (docs/theory.md#atlas), with
    γ_N(W) = min_{i, t≠α_i} (x_{i,α_i} − x_{i,t})ᵀ W z_i / ‖W‖_N,
    γ*_N = 1 / optimum with optimum = ‖W_mm^N‖_N, the Att-SVM's optimal value in norm N.

    ≥ 0 for every W (up to the optimum's accuracy), 0 exactly at max-margin directions, whether
    or not they are unique; scale-invariant in W. `optimum` is a number or a tensor that
    broadcasts against the batch (one per run; NaN, for an unsolved SVM, gives NaN). NaN for
    W = 0, whose normalised margin is undefined."""
    W = _t(W)
    least = least_margin(attention_logits(W, _t(X), _t(z)), alpha)
    return gap_of_margin(least, matrix_norm(W, norm), optimum)


def gap_of_margin(least: torch.Tensor, size: torch.Tensor, optimum) -> torch.Tensor:
    """`margin_gap` from W's least margin (`least_margin`) and its norm ‖W‖_N (`size`):
    1 − (least / size) · optimum."""
    return 1.0 - least / size * _t(optimum)
