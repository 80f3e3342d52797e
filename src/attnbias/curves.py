"""A group of stored runs as curves: each metric's values on the runs' common step grid, and
measures of a curve (its log-log slope). Data read from the store, used by the drivers, their
verdict rules (attnbias.judging) and figures; it sits on the store's floor and imports no
experiment."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .arrow_columns import column_numbers
from .store import DIVERGED, RunRecord


def without_diverged(records) -> list:
    """The runs that did not diverge. A diverged run (RunRecord.status, the one marker) is a
    result of its own kind: claims and figures leave it out, and count it
    (store.diverged_runs)."""
    return [r for r in records if r.status != DIVERGED]


@dataclass
class Curves:
    """Finished runs of one group on a common step grid: metric → (runs, steps) values; the
    group's diverged runs are left out and only counted."""

    steps: np.ndarray
    values: dict[str, np.ndarray]
    diverged: int = 0
    seeds: np.ndarray | None = None  # each kept run's seed: runs that share one are paired

    def seed_ids(self) -> np.ndarray:
        """The seed of each kept run: `seeds`, or the runs' positions when none were given."""
        if self.seeds is None:
            return np.arange(len(next(iter(self.values.values()))))
        return np.asarray(self.seeds)

    def mean(self, metric: str) -> np.ndarray:
        """Mean over the runs at each step; NaN if there are none."""
        return self._over_runs(np.mean, metric)

    def std(self, metric: str) -> np.ndarray:
        return self._over_runs(np.std, metric)

    def _over_runs(self, reduce, metric: str) -> np.ndarray:
        values = self.values[metric]
        return reduce(values, axis=0) if len(values) else np.full(values.shape[1:], np.nan)

    def final(self, metric: str) -> np.ndarray:
        """Each run's last value."""
        return self.values[metric][:, -1]

    def lowest_final(self, metric: str) -> float:
        """The smallest last value over the runs; NaN when the group has none (all diverged),
        which fails every comparison."""
        final = self.final(metric)
        return float(final.min()) if final.size else float("nan")


def _columns(record: RunRecord) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    table = record.metrics
    step = column_numbers(table.column("step"))
    metric = np.asarray(table.column("metric").to_pylist())
    value = column_numbers(table.column("value"))
    names = list(dict.fromkeys(metric))
    columns = {name: value[metric == name] for name in names}
    return step[metric == names[0]], columns


def record_curve(record: RunRecord, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """One stored run's recorded steps and its values of `metric` at them."""
    steps, columns = _columns(record)
    return steps, columns[metric]


def algorithm_name(record: RunRecord) -> str:
    return record.config["algorithm"]["name"]


def curves(records: list[RunRecord], group: Callable = algorithm_name) -> dict[str, Curves]:
    """Stored runs grouped (by algorithm name by default), in order of first appearance;
    diverged runs are counted, not included (a group of only diverged runs has no rows)."""
    grouped = defaultdict(list)
    for record in records:
        grouped[group(record)].append(record)
    out = {}
    for name, members in grouped.items():
        runs = [_columns(r) for r in members]
        steps = runs[0][0]
        if any(not np.array_equal(s, steps) for s, _ in runs):
            raise ValueError(f"runs of group {name!r} were recorded on different step grids")
        finished = {id(r) for r in without_diverged(members)}
        kept = [c for r, (_, c) in zip(members, runs) if id(r) in finished]
        out[name] = Curves(
            steps,
            {m: np.stack([c[m] for c in kept]) for m in runs[0][1]}
            if kept
            else {m: np.empty((0, len(steps))) for m in runs[0][1]},
            diverged=len(members) - len(kept),
            seeds=np.array([run_seed(r) for r in members if id(r) in finished], dtype=np.int64),
        )
    return out


def run_seed(record: RunRecord) -> int:
    """The seed of a stored run (its initialisation's; its data's where it has no init)."""
    config = record.config
    seed = config.get("init", {}).get("seed", config.get("data", {}).get("seed"))
    return int(seed if seed is not None else config.get("seed", -1))


MISALIGNMENT_CURVE = "misalignment"  # the key the drivers give misalignment_curve


def misalignment_curve(c: Curves) -> np.ndarray:
    """1 − cos θ(W_t, W_mm) from the recorded alignment/2, (runs, steps)."""
    return 1.0 - c.values["alignment/2"]


def loglog_slope(steps: np.ndarray, values: np.ndarray, start: float = 0.1) -> float:
    """Slope of log(values) against log(steps) over steps ≥ start · last step: a rate's
    exponent."""
    keep = (steps >= max(start * steps[-1], 1)) & (values > 0) & np.isfinite(values)
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(steps[keep]), np.log(values[keep]), 1)[0])
