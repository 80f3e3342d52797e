"""What the three real-data experiments share: config fields, starting a run, fixed data
subsets, one stored run per training, tidy metric tables, mean ± std over seeds and figure
files."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from ..config import named_tables, non_negative_int, positive_int, seed_ids
from ..data.text import TEXT_DATASETS
from ..engine.cluster import active_cluster, task_name
from ..store import ResultsStore, RunRecord, config_key, diverged_runs, tidy
from .minilm import encode
from .train import OPTIMIZERS, History

# Config fields every real-data experiment takes (add them to its SCHEMA).
REAL_COMMON = {
    "seeds": seed_ids("seeds of the runs: a list, or a count n meaning seeds 0 … n−1"),
    "steps": positive_int("training steps of every run"),
    "batch_size": positive_int("minibatch size"),
    "eval_every": positive_int("steps between test evaluations"),
    "train_size": non_negative_int("training examples: a fixed random subset (0: all)"),
    "test_size": non_negative_int("test examples: a fixed random subset (0: all)"),
    "threads": non_negative_int("torch threads (0: torch's default)"),
}
OPTIMIZER_TABLES = named_tables("the optimisers compared ([[optimizers]] tables)", OPTIMIZERS)


def start_run(config: dict, out: str | Path) -> tuple[dict, Path, ResultsStore]:
    """(config with its seeds as a list, out as a Path, the store in out) for a validated
    config; sets torch's thread count if the config asks for one."""
    seeds = config["seeds"]
    config = {**config, "seeds": list(range(seeds)) if isinstance(seeds, int) else seeds}
    if config["threads"]:
        torch.set_num_threads(config["threads"])
    return config, Path(out), ResultsStore(out)


def torch_device(name: str) -> torch.device:
    """The device a config's `device` names: "auto" is CUDA when present, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda': no CUDA device here; use --device cpu (or auto)")
    return torch.device(name)


def subset(n: int, size: int) -> np.ndarray:
    """Indices of a fixed random subset of `size` of n examples (all n, shuffled, if size is 0)."""
    order = np.random.default_rng(0).permutation(n)
    return order[:size] if size else order


def load_text(name: str, tokenizer, config: dict, path: str | None = None):
    """(train, test, classes) of a text dataset: train_size / test_size fixed random examples
    of each split, encoded to max_len tokens."""
    splits = TEXT_DATASETS[name](path)
    sizes = (config["train_size"], config["test_size"])
    data = []
    for split, size in zip(splits, sizes):
        order = subset(len(split), size)
        texts = [split.texts[i] for i in order]
        data.append(encode(tokenizer, texts, split.labels[order], config["max_len"]))
    return data[0], data[1], splits[0].classes


def run_once(
    store: ResultsStore, run_config: dict, out: Path, train_fn: Callable[[Path], tuple]
) -> RunRecord:
    """The stored run for run_config, training it first (train_fn(checkpoint_dir) → (metrics,
    arrays, info)) unless an intact finished run with that config is already in the store.

    On the active Dask cluster (engine/cluster.py) the training is one task and the record
    returned is a RemoteRun, read from the store when first used: an experiment submits all
    its runs before it reads any. A retried task resumes from the run's last checkpoint."""
    key = config_key(run_config)
    if not store.heal([key]):  # neither missing nor damaged (reported, then redone)
        return store.load(key)
    checkpoints = Path(out) / "checkpoints" / key
    cluster = active_cluster()
    if cluster is None:
        return train_and_store(store.root, run_config, key, checkpoints, train_fn)
    # Workers may run elsewhere: absolute paths, through the staging directory's links.
    root = store.runs.resolve().parent
    (Path(out) / "checkpoints").mkdir(parents=True, exist_ok=True)
    checkpoints = (Path(out) / "checkpoints").resolve() / key
    cluster.check_writable(root)
    future = cluster.submit(
        train_and_store, root, run_config, key, checkpoints, train_fn, name=task_name("run", [key])
    )
    return RemoteRun(key, run_config, future)


def train_and_store(
    root: Path, run_config: dict, key: str, checkpoints: Path, train_fn: Callable
) -> RunRecord:
    """Train one run (resuming from its checkpoints) and store it; its record. Also a task."""
    store = ResultsStore(root)
    if not store.has(key):  # a retried task whose earlier try stored it
        metrics, arrays, info = train_fn(checkpoints)
        store.save(run_config, metrics, arrays, info, key=key)
    shutil.rmtree(checkpoints, ignore_errors=True)  # the stored run supersedes them
    return store.load(key)


class RemoteRun:
    """A run being trained on the cluster: key and config at once, the rest of its RunRecord
    (metrics, arrays, info, status) once its task has finished."""

    def __init__(self, key: str, config: dict, future):
        self.key, self.config, self._future = key, config, future

    def __getattr__(self, name):
        if name.startswith("_"):  # not a RunRecord field (and no recursion while unpickling)
            raise AttributeError(name)
        record = self._future.result()
        self.__dict__.update(vars(record))  # resolved once; later reads are plain attributes
        return getattr(record, name)


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


def run_totals(records: dict) -> dict:
    """Number of runs, their total training time and the diverged ones, for the summary, and
    the keys of the stored runs (for the publication's manifest)."""
    seconds = sum(r.info.get("seconds", 0.0) for r in records.values())
    return {
        "runs": len(records),
        "seconds": round(seconds, 1),
        "diverged": diverged_runs(records.values()),
        "run_keys": [r.key for r in records.values()],
    }


def fmt(mean: float, std: float, digits: int = 2) -> str:
    return f"{mean:.{digits}f} ± {std:.{digits}f}"
