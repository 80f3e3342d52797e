"""Log-spaced integer step grids on which metrics are recorded."""

from __future__ import annotations

import numpy as np


def log_grid(steps: int, points: int = 60) -> np.ndarray:
    """Step 0 and about `points` distinct integers log-spaced from 1 to `steps` (both included)."""
    if steps < 1:
        return np.zeros(1, dtype=np.int64)
    spaced = np.round(np.geomspace(1, steps, max(points, 2))).astype(np.int64)
    return np.unique(np.concatenate([[0], spaced]))


def union_grid(lengths) -> np.ndarray:
    """Every step at which some run records, from (steps, points) pairs of the runs."""
    return np.unique(np.concatenate([log_grid(s, p) for s, p in set(lengths)]))
