"""What the three real-data experiments share: config checks, one stored run per training,
tidy metric tables, mean ± std over seeds and figure files."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..store import ResultsStore, RunRecord, config_key, tidy
from .train import History


def require(config: Mapping, name: str, kind, check=None, why: str = ""):
    """config[name], which must exist, be a `kind` and pass `check`; else a ValueError naming it."""
    if name not in config:
        raise ValueError(f"config field {name!r} is missing")
    value = config[name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ValueError(
            f"config field {name!r} must be {getattr(kind, '__name__', kind)}, got {value!r}"
        )
    if check is not None and not check(value):
        raise ValueError(f"config field {name!r} {why or 'is invalid'}, got {value!r}")
    return value


def seed_list(config: dict) -> list[int]:
    """config["seeds"] as a list: a list of ints, or an int n meaning seeds 0 … n−1 (what
    `attnbias reproduce --seeds N` passes)."""
    seeds = config.get("seeds")
    if isinstance(seeds, int) and not isinstance(seeds, bool) and seeds > 0:
        return list(range(seeds))
    if isinstance(seeds, list) and seeds and all(isinstance(s, int) for s in seeds):
        return seeds
    raise ValueError(
        f"config field 'seeds' must be a positive int or a list of ints, got {seeds!r}"
    )


def run_once(
    store: ResultsStore, run_config: dict, out: Path, train_fn: Callable[[Path], tuple]
) -> RunRecord:
    """The stored run for run_config, training it first (train_fn(checkpoint_dir) → (metrics,
    arrays, info)) unless a finished run with that config is already in the store."""
    key = config_key(run_config)
    if not store.has(key):
        checkpoints = Path(out) / "checkpoints" / key
        metrics, arrays, info = train_fn(checkpoints)
        store.save(run_config, metrics, arrays, info, key=key)
        shutil.rmtree(checkpoints, ignore_errors=True)  # the stored run supersedes them
    return store.load(key)


def history_table(history: History) -> pa.Table:
    """Per-step train loss (and SPS step size) plus the evaluations, as one tidy table."""
    per_step = tidy(
        history.steps, {"train_loss": history.train_loss, "step_size": history.step_size}
    )
    evals = history.eval_table()
    steps = evals.pop("step")
    return pa.concat_tables([per_step, tidy(steps, evals)])


def series(record: RunRecord, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values) of one metric of a stored run."""
    table = record.metrics.filter(pa.compute.equal(record.metrics["metric"], metric))
    return table["step"].to_numpy(), table["value"].to_numpy()


def mean_std(curves: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std over runs, truncated to the shortest (a diverged run stops early)."""
    n = min(len(c) for c in curves)
    stacked = np.stack([np.asarray(c[:n], dtype=float) for c in curves])
    return stacked.mean(0), stacked.std(0)


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average (minibatch losses are noisy)."""
    if window <= 1 or len(values) < window:
        return np.asarray(values, dtype=float)
    c = np.cumsum(np.insert(np.asarray(values, dtype=float), 0, 0.0))
    head = c[1:window] / np.arange(1, window)
    return np.concatenate([head, (c[window:] - c[:-window]) / window])


def save_figure(fig, out: Path, name: str) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.{ext}" for ext in ("png", "pdf")]
    for path in paths:
        fig.savefig(path, dpi=150, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return [str(p) for p in paths]


def run_totals(records: dict) -> dict:
    """Number of runs and their total training time, for the summary."""
    seconds = sum(r.info.get("seconds", 0.0) for r in records.values())
    return {"runs": len(records), "seconds": round(seconds, 1)}


def fmt(mean: float, std: float, digits: int = 2) -> str:
    return f"{mean:.{digits}f} ± {std:.{digits}f}"
