"""Results store: one directory per experiment, one atomically written directory per run, and
the experiment's outputs published as one unit.

    <root>/runs/<key>/config.json      the run's resolved config (key = hash of it)
                      metrics.parquet  tidy rows: step, metric, value
                      arrays.npz       solutions, final iterates, ...
                      info.json        anything else (timings, status, verdicts)
                      manifest.json    size and sha256 of each file above, the run's status
    <root>/outputs/<config hash>/      one publication: config.json, summary.json,
                                       metrics.parquet, figures, manifest.json
    <root>/latest -> outputs/<hash>    the current publication (a symlink, swapped atomically)
    <root>/summary.json -> latest/summary.json  (and config.json, metrics.parquet, figures)
    <root>/.lock                       held (flock) by the process writing the directory

A run directory is written beside its final place and renamed into it, manifest last, so a
sweep killed at any moment loses no finished run; a run whose files do not match its manifest
is reported and trained again; leftovers of killed writers are removed by the next writer.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

MANIFEST = "manifest.json"
FINISHED, DIVERGED = "finished", "diverged"
# Published outputs reachable from the experiment directory itself (through `latest`).
LINKED = ("config.json", "summary.json", "metrics.parquet")


class StoreBusy(ValueError):
    """Another live process holds the directory's lock (a ValueError: on the command line it is
    a usage error, exit code 2, not a crash)."""


class StoreReadOnly(ValueError):
    """The directory cannot be written (permissions, a read-only file system)."""


class DamagedRun(ValueError):
    """A stored run whose files cannot be read back."""


def config_key(config: Mapping) -> str:
    """Stable 16-hex-digit hash of a JSON-able config (key order does not matter)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def finite_json(obj):
    """obj with every non-finite float replaced by None (JSON null) and numpy values made
    Python ones, so that it serialises as strict JSON."""
    if isinstance(obj, (np.generic, np.ndarray)):
        obj = obj.tolist()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    return str(obj)


def json_text(obj) -> str:
    """Strict JSON (no NaN / Infinity: they become null), indented."""
    return json.dumps(finite_json(obj), indent=1, allow_nan=False, ensure_ascii=False)


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


def file_digest(path: Path) -> dict:
    data = path.read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write_manifest(directory: Path, **fields) -> None:
    """manifest.json of every other file in `directory` (size, sha256), plus `fields`."""
    files = {
        p.name: file_digest(p)
        for p in sorted(directory.iterdir())
        if p.is_file() and p.name != MANIFEST
    }
    (directory / MANIFEST).write_text(json_text({"files": files, **fields}))


def manifest_problem(directory: Path, deep: bool = True) -> str | None:
    """Why `directory` does not match its manifest (None if it does); without `deep`, only
    sizes are compared."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        files = manifest["files"]
    except FileNotFoundError:
        return "no manifest"
    except (ValueError, KeyError, TypeError):
        return "unreadable manifest"
    for name, expected in files.items():
        path = directory / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != expected["bytes"]:
            return f"{name} has {path.stat().st_size} bytes, {expected['bytes']} expected"
        if deep and file_digest(path)["sha256"] != expected["sha256"]:
            return f"{name} does not match its checksum"
    return None


@dataclass
class RunRecord:
    key: str
    config: dict
    metrics: pa.Table
    arrays: dict
    info: dict

    @property
    def status(self) -> str:
        """ "finished", or "diverged" (its iterate or loss became non-finite; real-data runs
        mark it with "diverged": true)."""
        diverged = self.info.get("status") == DIVERGED or self.info.get("diverged") is True
        return DIVERGED if diverged else FINISHED


def diverged_runs(records) -> list[dict]:
    """Who diverged and where: the runs that claims leave out."""
    return [
        {
            "run": r.key,
            "algorithm": r.config.get("algorithm", r.config.get("optimizer", {})).get("name"),
            "seed": r.config.get("seed", r.config.get("init", {}).get("seed")),
            "diverged_at": r.info.get("diverged_at"),
        }
        for r in records
        if r.status == DIVERGED
    ]


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def say(message: str) -> None:
    """One line on stderr: what the store noticed and did about it."""
    print(f"attnbias: {message}", file=sys.stderr, flush=True)


class ResultsStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.runs = self.root / "runs"

    # --- runs ----------------------------------------------------------------------------

    def has(self, key: str) -> bool:
        """A run with this key was stored completely (its manifest is written last)."""
        return (self.runs / key / MANIFEST).exists()

    def keys(self) -> list[str]:
        if not self.runs.exists():
            return []
        # Hidden names are writers' staging and discarded directories, never runs.
        return sorted(
            p.name
            for p in self.runs.iterdir()
            if not p.name.startswith(".") and (p / MANIFEST).exists()
        )

    def problem(self, key: str) -> str | None:
        """None if the run is stored intact; else "missing" or what is wrong with it."""
        d = self.runs / key
        if not d.exists():
            return "missing"
        return manifest_problem(d)

    def save(
        self,
        config: Mapping,
        metrics: pa.Table | None = None,
        arrays: Mapping | None = None,
        info: Mapping | None = None,
        key: str | None = None,
    ) -> str:
        """Write one finished run atomically; returns its key. Two processes saving the same
        key (the same config, hence the same result) both succeed; one copy stays."""
        key = key or config_key(config)
        info = dict(info or {})
        self.runs.mkdir(parents=True, exist_ok=True)
        # The writer's PID in the name lets a later writer tell a leftover from live work.
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}-{os.getpid()}-", dir=self.runs))
        try:
            if metrics is not None:
                pq.write_table(metrics, tmp / "metrics.parquet")
            if arrays:
                np.savez(tmp / "arrays.npz", **arrays)
            (tmp / "info.json").write_text(json_text(info))
            (tmp / "config.json").write_text(json.dumps(dict(config), default=str, indent=1))
            write_manifest(tmp, key=key, status=info.get("status", FINISHED))
            self._install(tmp, self.runs / key)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return key

    def copy_runs_from(self, other: ResultsStore) -> int:
        """Copy in the intact runs of another store (which may be read-only) that this one
        lacks, each atomically; returns how many."""
        copied = 0
        self.runs.mkdir(parents=True, exist_ok=True)
        for key in other.keys():
            if self.has(key) or other.problem(key) is not None:
                continue
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}-{os.getpid()}-", dir=self.runs))
            try:
                shutil.copytree(other.runs / key, tmp, dirs_exist_ok=True)
                self._install(tmp, self.runs / key)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            copied += 1
        return copied

    def _install(self, tmp: Path, final: Path) -> None:
        """Rename tmp to final; an intact final already there (a racing writer's) is kept, a
        damaged one is moved aside first."""
        for _ in range(3):
            try:
                os.rename(tmp, final)
                return
            except OSError as err:
                if err.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
            if manifest_problem(final) is None:
                return
            self._discard(final)
        raise OSError(f"could not store run {final.name}: another process keeps replacing it")

    def _discard(self, directory: Path) -> None:
        """Remove a run directory: renamed out of sight first, so no reader sees it half gone."""
        aside = directory.with_name(f".{directory.name}-{os.getpid()}-discarded")
        try:
            os.rename(directory, aside)
        except FileNotFoundError:
            return
        shutil.rmtree(aside, ignore_errors=True)

    def discard(self, key: str) -> None:
        self._discard(self.runs / key)

    def load(self, key: str) -> RunRecord:
        """The stored run; DamagedRun if any of its files cannot be read."""
        d = self.runs / key
        problem = manifest_problem(d, deep=False)  # sizes only: cheap, catches a torn copy
        if problem is not None:
            raise DamagedRun(f"run {key} in {self.runs} is damaged: {problem}")
        try:
            config = json.loads((d / "config.json").read_text())
            metrics = (
                pq.read_table(d / "metrics.parquet") if (d / "metrics.parquet").exists() else None
            )
            arrays = {}
            if (d / "arrays.npz").exists():
                with np.load(d / "arrays.npz", allow_pickle=False) as f:
                    arrays = {k: f[k] for k in f.files}
            info = json.loads((d / "info.json").read_text()) if (d / "info.json").exists() else {}
        except (OSError, ValueError, EOFError, pa.ArrowException) as err:
            raise DamagedRun(f"run {key} in {self.runs} cannot be read: {err}") from err
        return RunRecord(key, config, metrics, arrays, info)

    def heal(self, keys) -> list[str]:
        """Of `keys`, those to (re)train: missing ones, and damaged ones, which are reported in
        one line each and removed."""
        todo = []
        for key in keys:
            problem = self.problem(key)
            if problem is None:
                continue
            if problem != "missing":
                say(f"run {key} in {self.runs} is damaged ({problem}); training it again")
                self.discard(key)
            todo.append(key)
        return todo

    def clean_leftovers(self) -> list[str]:
        """Remove temporary directories of writers that died (their PID is not alive)."""
        removed = []
        for parent, prefix in (
            (self.runs, "."),
            (self.root / "outputs", "."),
            (self.root, ".staging-"),
        ):
            if not parent.is_dir():
                continue
            for p in parent.iterdir():
                if p.name.startswith(prefix) and p.is_dir() and not pid_alive(leftover_pid(p.name)):
                    shutil.rmtree(p, ignore_errors=True)
                    removed.append(p.name)
        return removed

    def table(self, keys=None, records=None) -> pa.Table:
        """Every run's metrics in one tidy table, with the run key and its scalar config fields,
        nested ones as "table.field" (of the given keys, or of records already loaded)."""
        parts = []
        if records is None:
            records = [self.load(key) for key in (keys if keys is not None else self.keys())]
        for rec in records:
            if rec.metrics is None:
                continue
            t = rec.metrics.append_column("run", pa.array([rec.key] * rec.metrics.num_rows))
            t = t.append_column("status", pa.array([rec.status] * t.num_rows))
            for name, value in _scalars(rec.config):
                t = t.append_column(name, pa.array([value] * t.num_rows))
            parts.append(t)
        return pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})

    def write_json(self, name: str, obj) -> Path:
        """Atomically write an experiment-level strict-JSON file."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / name
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json_text(obj))
        os.replace(tmp, path)
        return path

    # --- one writer at a time --------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the directory's write lock: StoreBusy if a live process holds it (the kernel
        releases a dead holder's flock, so there are no stale locks); StoreReadOnly if the
        directory cannot be written."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            if not isinstance(err, PermissionError) and err.errno != errno.EROFS:
                raise
            raise StoreReadOnly(f"{self.root} cannot be written ({err.strerror})") from err
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                raise StoreBusy(
                    f"{self.root} is being written by PID {holder}; wait or use another --out"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            self.clean_leftovers()
            yield
        finally:
            os.close(fd)  # releases the flock

    # --- published outputs ------------------------------------------------------------------

    @property
    def latest(self) -> Path:
        return self.root / "latest"

    def published(self) -> Path | None:
        """The current publication's directory, if any."""
        return self.latest.resolve() if self.latest.is_dir() else None

    def staging(self) -> Path:
        """A fresh hidden directory to write a publication in; `runs` and `checkpoints` in it
        link to the experiment's own, so whatever writes there resumes and shares them."""
        self.runs.mkdir(parents=True, exist_ok=True)
        (self.root / "checkpoints").mkdir(exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".staging-{os.getpid()}-", dir=self.root))
        for shared in ("runs", "checkpoints"):
            os.symlink(Path("..") / shared, stage / shared)
        return stage

    def publish(self, stage: Path, name: str, **manifest_fields) -> Path:
        """Make `stage` the current publication outputs/<name>: manifest written, renamed into
        place, `latest` swapped to it in one rename, and the experiment directory's links
        (summary.json, config.json, metrics.parquet, figures) pointed through `latest`."""
        for shared in ("runs", "checkpoints"):
            (stage / shared).unlink()
        write_manifest(stage, **manifest_fields)
        outputs = self.root / "outputs"
        outputs.mkdir(exist_ok=True)
        final = outputs / name
        if final.exists():  # an earlier publication of this config: superseded
            self._discard(final)
        os.rename(stage, final)
        self._link(self.latest, Path("outputs") / name)
        for p in final.iterdir():
            if p.name in LINKED or p.suffix in (".png", ".pdf"):
                self._link(self.root / p.name, Path("latest") / p.name)
        checkpoints = self.root / "checkpoints"
        if checkpoints.is_dir() and not any(checkpoints.iterdir()):
            checkpoints.rmdir()
        return final

    def _link(self, path: Path, target: Path) -> None:
        """path → target as a symlink, replacing whatever was there in one rename."""
        if path.is_symlink() and Path(os.readlink(path)) == target:
            return
        tmp = path.with_name(f".{path.name}.{os.getpid()}.link")
        tmp.unlink(missing_ok=True)
        os.symlink(target, tmp)
        os.replace(tmp, path)


def leftover_pid(name: str) -> int:
    """The writer PID in a temporary name ".<what>-<pid>-<random>"; 0 (dead) if there is none
    (as in the temporaries of earlier versions)."""
    parts = name[1:].split("-")
    return int(parts[1]) if len(parts) >= 3 and parts[1].isdigit() else 0


def _scalars(config: Mapping, prefix: str = ""):
    """(name, value) of the scalar fields of a config, nested tables flattened to "a.b"."""
    for name, value in config.items():
        if isinstance(value, Mapping):
            yield from _scalars(value, f"{prefix}{name}.")
        elif isinstance(value, (int, float, str, bool)):
            yield f"{prefix}{name}", value
