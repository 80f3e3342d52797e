"""Results store: one directory per experiment, one atomically written directory per run.

    <root>/runs/<key>/config.json    the run's resolved config (key = hash of it)
                      metrics.parquet tidy rows: step, metric, value
                      arrays.npz      solutions, final iterates, ...
                      info.json       anything else (timings, verdicts)

A run directory appears only when complete (written beside it, then renamed), so a sweep killed
at any moment loses no finished run, and `has(key)` lets a rerun skip what is done.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def config_key(config: Mapping) -> str:
    """Stable 16-hex-digit hash of a JSON-able config (key order does not matter)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def tidy(steps, metrics: Mapping[str, np.ndarray]) -> pa.Table:
    """Long table (step, metric, value) from per-step metric columns of equal length."""
    steps = np.asarray(steps, dtype=np.int64)
    names, values = [], []
    for name, col in metrics.items():
        col = np.asarray(col, dtype=np.float64)
        if col.shape != steps.shape:
            raise ValueError(
                f"metric {name!r} has {col.shape[0]} values for {steps.shape[0]} steps"
            )
        names.append(np.full(steps.shape, name, dtype=object))
        values.append(col)
    return pa.table(
        {
            "step": np.tile(steps, len(names)),
            "metric": np.concatenate(names) if names else np.array([], dtype=object),
            "value": np.concatenate(values) if values else np.array([], dtype=np.float64),
        }
    )


@dataclass
class RunRecord:
    key: str
    config: dict
    metrics: pa.Table
    arrays: dict
    info: dict


class ResultsStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.runs = self.root / "runs"

    def has(self, key: str) -> bool:
        return (self.runs / key / "config.json").exists()

    def keys(self) -> list[str]:
        if not self.runs.exists():
            return []
        return sorted(p.name for p in self.runs.iterdir() if (p / "config.json").exists())

    def save(
        self,
        config: Mapping,
        metrics: pa.Table | None = None,
        arrays: Mapping | None = None,
        info: Mapping | None = None,
        key: str | None = None,
    ) -> str:
        """Write one finished run atomically; returns its key."""
        key = key or config_key(config)
        self.runs.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=self.runs))
        try:
            if metrics is not None:
                pq.write_table(metrics, tmp / "metrics.parquet")
            if arrays:
                np.savez(tmp / "arrays.npz", **arrays)
            (tmp / "info.json").write_text(
                json.dumps(dict(info or {}), default=_jsonable, indent=1)
            )
            # config.json last: its presence marks the run complete.
            (tmp / "config.json").write_text(json.dumps(dict(config), default=str, indent=1))
            final = self.runs / key
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return key

    def load(self, key: str) -> RunRecord:
        d = self.runs / key
        config = json.loads((d / "config.json").read_text())
        metrics = pq.read_table(d / "metrics.parquet") if (d / "metrics.parquet").exists() else None
        arrays = {}
        if (d / "arrays.npz").exists():
            with np.load(d / "arrays.npz", allow_pickle=False) as f:
                arrays = {k: f[k] for k in f.files}
        info = json.loads((d / "info.json").read_text()) if (d / "info.json").exists() else {}
        return RunRecord(key, config, metrics, arrays, info)

    def table(self, keys=None, records=None) -> pa.Table:
        """Every run's metrics in one tidy table, with the run key and its scalar config fields,
        nested ones as "table.field" (of the given keys, or of records already loaded)."""
        parts = []
        if records is None:
            records = [self.load(key) for key in (keys if keys is not None else self.keys())]
        for rec in records:
            key = rec.key
            if rec.metrics is None:
                continue
            t = rec.metrics.append_column("run", pa.array([key] * rec.metrics.num_rows))
            for name, value in _scalars(rec.config):
                t = t.append_column(name, pa.array([value] * t.num_rows))
            parts.append(t)
        return pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})

    def write_json(self, name: str, obj) -> Path:
        """Atomically write an experiment-level JSON file (summary, resolved config)."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / name
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(obj, indent=1, default=_jsonable))
        os.replace(tmp, path)
        return path


def _scalars(config: Mapping, prefix: str = ""):
    """(name, value) of the scalar fields of a config, nested tables flattened to "a.b"."""
    for name, value in config.items():
        if isinstance(value, Mapping):
            yield from _scalars(value, f"{prefix}{name}.")
        elif isinstance(value, (int, float, str, bool)):
            yield f"{prefix}{name}", value


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)
