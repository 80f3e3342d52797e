"""What the synthetic experiments share: seeding, the runs of an optimal-token sweep, running
a sweep into the experiment's store, and reading the stored runs back as curves."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch

from ..config import parse_algorithms
from ..engine.cluster import active_cluster
from ..engine.spec import RunSpec
from ..engine.sweep import SweepReport, run_sweep
from ..store import DIVERGED, ResultsStore, RunRecord, diverged_runs


def seeds(config: dict) -> range:
    return range(1, config["seeds"] + 1)


def random_init(shape, scale: float, seed: int, stream: int = 0) -> np.ndarray:
    """scale · N(0, 1) entries drawn from the run's seed (streams keep W, K, Q, v independent
    of each other and of the data, which uses the bare seed)."""
    return scale * np.random.default_rng([seed, 1000 + stream]).standard_normal(shape)


def optimal_token_specs(
    config: dict, generator: str, make: Callable, shape: dict, init: Callable[[int], dict]
) -> list[RunSpec]:
    """One run per algorithm × seed on the seed's problem make(**shape, seed=seed), from the
    initial weights init(seed), with metrics about the optimal tokens (ℓ2 norm)."""
    problems = {s: make(**shape, seed=s) for s in seeds(config)}
    return [
        RunSpec(
            {
                "experiment": config["experiment"],
                "data": {"generator": generator, **shape, "seed": seed},
                "init": {"scale": config["init_scale"], "seed": seed},
            },
            problems[seed],
            algorithm,
            config["steps"],
            init(seed),
            loss=config["loss"],
            norms=(2.0,),
            alpha="optimal",
            grid_points=config["grid_points"],
        )
        for algorithm in parse_algorithms(config["algorithms"])
        for seed in seeds(config)
    ]


def sweep(config: dict, out: Path, specs: list[RunSpec]) -> SweepReport:
    """Run (or resume) the sweep in `out` (on the active Dask cluster, if any: see
    base.run_experiment), then write every run's metrics as one tidy table out/metrics.parquet
    (run × step × metric, with the run's scalar config fields)."""
    store = ResultsStore(out)
    if config["device"] == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{config['experiment']}: device 'cuda' asked for, but no GPU is visible")
    report = run_sweep(
        specs,
        store,
        batch_size=config["batch_size"] or None,
        device=None if config["device"] == "auto" else config["device"],
        desc=config["experiment"],
        cluster=active_cluster(),
    )
    table = store.table(records=report.records)
    tmp = Path(out) / ".metrics.parquet.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, Path(out) / "metrics.parquet")
    return report


def sweep_summary(report: SweepReport) -> dict:
    """The sweep's counts; "run_keys" (the stored runs the outputs were made from) goes to the
    publication's manifest, "diverged" (runs left out of the claims) is shown with them."""
    return {
        "runs": len(report.records),
        "diverged": diverged_runs(report.records),
        "run_keys": [r.key for r in report.records],
        "trained": report.ran,
        "reused": report.skipped,
        "svms_solved": report.svms,
        "seconds": round(report.seconds, 2),
    }


@dataclass
class Curves:
    """Finished runs of one group on a common step grid: metric → (runs, steps) values; the
    group's diverged runs are left out and only counted."""

    steps: np.ndarray
    values: dict[str, np.ndarray]
    diverged: int = 0

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
    step = table.column("step").to_numpy()
    metric = np.asarray(table.column("metric").to_pylist())
    value = table.column("value").to_numpy()
    names = list(dict.fromkeys(metric))
    columns = {name: value[metric == name] for name in names}
    return step[metric == names[0]], columns


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
        kept = [c for r, (_, c) in zip(members, runs) if r.status != DIVERGED]
        out[name] = Curves(
            steps,
            {m: np.stack([c[m] for c in kept]) for m in runs[0][1]}
            if kept
            else {m: np.empty((0, len(steps))) for m in runs[0][1]},
            diverged=len(members) - len(kept),
        )
    return out


def loglog_slope(steps: np.ndarray, values: np.ndarray, start: float = 0.1) -> float:
    """Slope of log(values) against log(steps) over steps ≥ start · last step: a rate's
    exponent."""
    keep = (steps >= max(start * steps[-1], 1)) & (values > 0) & np.isfinite(values)
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(steps[keep]), np.log(values[keep]), 1)[0])
