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

from . import compiled
from .batch import RunBatch


@dataclass
class Finished:
    """Runs that have just completed."""

    index: np.ndarray  # their positions in the sweep's list of specs
    steps: int
    grid: np.ndarray  # the steps recorded (a superset of each run's own grid)
    snapshots: dict[str, torch.Tensor]  # name → (k, len(grid), ...) on the CPU
    final: dict[str, np.ndarray]  # final parameters, name → (k, ...)
    # per run, the index in `grid` of the first recorded non-finite iterate; -1: none
    first_nonfinite: np.ndarray | None = None

    def diverged_between(self, r: int) -> tuple[int, int] | None:
        """(last recorded step with a finite iterate, first recorded step without) of run r,
        or None if every recorded iterate is finite."""
        if self.first_nonfinite is None or self.first_nonfinite[r] < 0:
            return None
        g = int(self.first_nonfinite[r])
        return int(self.grid[g - 1]) if g > 0 else -1, int(self.grid[g])


def simulate(
    batch: RunBatch,
    grid: np.ndarray,
    on_finish: Callable[[Finished], None],
    progress: Callable[[int], None] | None = None,
    fused: bool = True,
    backend: str | None = None,
) -> None:
    """Run every run of `batch` for its own number of steps, recording at the steps of `grid`
    (sorted, from 0, with each run's last step); `progress(k)` is told of every k steps done.
    fused: step by `engine.fused` (False: the unfused reference step). backend: "compiled"
    (`engine.compiled`, for the batches it covers; None: $ATTNBIAS_ENGINE_BACKEND, by default
    "compiled") or "torch"; the unfused step is always torch's.

    Divergence is detected on the recorded iterates only (their copy to the host is a sync the
    loop makes anyway), so the check costs nothing per step; a non-finite iterate stays
    non-finite, so the first recorded one brackets the step where it happened. So is mirror
    descent's range check for p > 2 (`advance_torch`): no host synchronisation between recording
    points."""
    rows = torch.arange(len(batch))  # each active run's row in the snapshot tensors
    snapshots = {
        name: torch.full((len(batch), len(grid), *w.shape[1:]), float("nan"), dtype=w.dtype)
        for name, w in batch.observed().items()
    }
    first_nonfinite = np.full(len(batch), -1)  # by snapshot row
    g, t, reported = 0, 0, 0
    defer = True  # mirror descent's range check at recording points only (see `advance_torch`)
    fast = fused and compiled.steps_compiled(batch, backend)  # until a stretch needs torch's redo
    tick = max(int(batch.steps.max()) // 200, 1)

    def counted() -> None:
        nonlocal t, reported
        t += 1
        if progress is not None and t - reported == tick:
            progress(tick)
            reported = t

    while True:
        if grid[g] == t:
            for name, w in batch.observed().items():
                w = w.cpu()
                snapshots[name][rows, g] = w
                bad = ~torch.isfinite(w).flatten(1).all(1).numpy()
                fresh = rows.numpy()[bad]
                first_nonfinite[fresh[first_nonfinite[fresh] < 0]] = g
            g += 1
        done = batch.steps == t
        if done.any():
            mask = torch.as_tensor(done)
            # every run of the first batch finishing: their rows are all rows, in order (a view,
            # not a copy: nothing writes into them after)
            every = done.all() and len(rows) == len(first_nonfinite)
            on_finish(
                Finished(
                    index=batch.index[done],
                    steps=t,
                    grid=grid[:g],
                    snapshots={
                        k: s[:, :g] if every else s[rows[mask], :g] for k, s in snapshots.items()
                    },
                    final={k: w[mask.to(w.device)].cpu().numpy() for k, w in batch.named().items()},
                    first_nonfinite=first_nonfinite[rows[mask].numpy()],
                )
            )
            if done.all():
                if progress is not None:
                    progress(t - reported)
                return
            batch, rows = batch.take(~done), rows[~mask]
        # Steps up to the next recording or finishing step need no look at the runs.
        stop = min(int(grid[g]) if g < len(grid) else t + 1, int(batch.steps.min()))
        # On the CPU a read of the host is no synchronisation, and cheaper than the flag
        deferred = defer and batch.defers_range_check and batch.data.X.is_cuda
        if fast:
            fast = advance_compiled(batch, stop - t, counted)
            if fast:
                continue
        with torch.inference_mode():  # less dispatch per operation; no autograd here
            if not advance_torch(batch, stop - t, fused, counted, deferred):
                defer = False  # this batch needed the redo once: check every step from now


def advance_compiled(batch: RunBatch, steps: int, counted: Callable[[], None]) -> bool:
    """`steps` steps of `batch` by the compiled backend, calling `counted()` for each; False,
    with the state as it was, where a dual iterate left the compiled step's range (the
    caller takes these steps with torch)."""
    saved = [x.clone() for x in batch.state()]
    if not compiled.advance(batch, steps):
        for x, y in zip(batch.state(), saved):
            x.copy_(y)
        return False
    for _ in range(steps):
        counted()
    return True


def advance_torch(
    batch: RunBatch, steps: int, fused: bool, counted: Callable[[], None], defer: bool
):
    """`steps` steps of `batch`, calling `counted()` after each; returns False if they needed
    mirror descent's log-domain redo (`optim.functional.step_`) with `defer`.

    defer: the steps check the range of the dual iterates on the device (`range_ok`), not on
    the host, and the flag is read once at the end. Had any step needed the redo, the state
    saved before them is restored and the steps are taken again with the check at each one:
    either way the result is the checked steps' bit for bit. On CUDA each step is a replay of
    its graph (`RunBatch.stepping`)."""
    step = batch.stepping(fused, defer)
    if defer:
        saved = [x.clone() for x in batch.state()]
        batch.range_flag.fill_(True)
    for _ in range(steps):
        step()
        counted()
    if not defer or batch.range_flag.item():  # the one host synchronisation
        return True
    for x, y in zip(batch.state(), saved):
        x.copy_(y)
    step = batch.stepping(fused)
    for _ in range(steps):
        step()
    return False
