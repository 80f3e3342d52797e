"""Measures of a trained model's weights: sparsity (Hoyer's, the near-zero share, counts above a
threshold), their scale, and the K, Q, V matrices of a TextTransformer gathered over its
blocks."""

from __future__ import annotations

import numpy as np
import torch

from .transformer import TextTransformer


def hoyer_sparsity(w: np.ndarray) -> float:
    """(√n − ‖w‖₁/‖w‖₂)/(√n − 1): 0 for equal magnitudes, 1 for a single nonzero; scale-free."""
    w = np.abs(w.ravel())
    n = w.size
    return float((np.sqrt(n) - w.sum() / np.sqrt((w**2).sum())) / (np.sqrt(n) - 1))


def small_share(w: np.ndarray, relative: float = 0.01) -> float:
    """Share of entries below `relative` × the root-mean-square entry: near-zero weights."""
    w = np.abs(w.ravel())
    return float((w < relative * np.sqrt((w**2).mean())).mean())


def count_above(w: np.ndarray, threshold: float) -> int:
    """Entries with |w| > threshold (the paper's sparsity count at 0.06)."""
    return int((np.abs(w) > threshold).sum())


def rms(w: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.asarray(w, dtype=np.float64) ** 2)))


def kqv_weights(model: TextTransformer) -> dict[str, np.ndarray]:
    blocks = model.encoder.blocks
    return {
        name: torch.cat(
            [getattr(b.attention, attr).weight.detach().cpu().flatten() for b in blocks]
        ).numpy()
        for name, attr in (("K", "key"), ("Q", "query"), ("V", "value"))
    }
