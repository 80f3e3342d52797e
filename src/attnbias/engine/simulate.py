"""The engine's loop: every run of a batch advances in one tensor program per step.

Iterates are recorded only on a log-spaced grid, and metrics are computed afterwards from those
snapshots (they may need the max-margin solutions, which are known only once training ends).
Runs stop at their own step count: the finished ones are handed to `on_finish` at once (so they
can be stored while the rest train on) and dropped from the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from . import update
from .batch import RunBatch


@dataclass
class Finished:
    """Runs that have just completed."""

    index: np.ndarray  # their positions in the sweep's list of specs
    steps: int
    grid: np.ndarray  # the steps recorded (a superset of each run's own grid)
    snapshots: dict[str, torch.Tensor]  # name → (k, len(grid), ...) on the CPU
    final: dict[str, np.ndarray]  # final parameters, name → (k, ...)


def simulate(
    batch: RunBatch,
    grid: np.ndarray,
    on_finish: Callable[[Finished], None],
    progress: Callable[[int], None] | None = None,
) -> None:
    """Run every run of `batch` for its own number of steps, recording at the steps of `grid`
    (sorted, from 0, with each run's last step); `progress(k)` is told of every k steps done."""
    rows = torch.arange(len(batch))  # each active run's row in the snapshot tensors
    snapshots = {
        name: torch.full((len(batch), len(grid), *w.shape[1:]), float("nan"), dtype=w.dtype)
        for name, w in batch.observed().items()
    }
    g, t, reported = 0, 0, 0
    tick = max(int(batch.steps.max()) // 200, 1)
    while True:
        if grid[g] == t:
            for name, w in batch.observed().items():
                snapshots[name][rows, g] = w.cpu()
            g += 1
        done = batch.steps == t
        if done.any():
            mask = torch.as_tensor(done)
            on_finish(
                Finished(
                    index=batch.index[done],
                    steps=t,
                    grid=grid[:g],
                    snapshots={k: s[rows[mask], :g] for k, s in snapshots.items()},
                    final={k: w[mask.to(w.device)].cpu().numpy() for k, w in batch.named().items()},
                )
            )
            if done.all():
                if progress is not None:
                    progress(t - reported)
                return
            batch, rows = batch.take(~done), rows[~mask]
        loss, grads = batch.gradients()
        update.step(batch.params, batch.duals, grads, batch.buffers, loss, batch.hyper)
        t += 1
        if progress is not None and t - reported == tick:
            progress(tick)
            reported = t
