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

The directory may be shared with others (docs/SECURITY.md): the store opens no symbolic link
it did not make, refuses a runs/, outputs/ or checkpoints/ that is not a plain directory (and a
`latest` that points anywhere but into outputs/), deletes only its own temporary names whose
writer is dead, and copies only regular files that match their manifest's sha256.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import math
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .npz import load_npz

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
FINISHED, DIVERGED = "finished", "diverged"
# Published outputs reachable from the experiment directory itself (through `latest`).
LINKED = ("config.json", "summary.json", "metrics.parquet")
# Figure files a publication holds (figures.save_figure writes these), linked like LINKED.
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")
# The directories of the layout, never symbolic links (the staging directory's runs and
# checkpoints links are the store's own, made and removed by it).
DIRECTORIES = ("runs", "outputs", "checkpoints")
MAX_RUN_ARRAYS_BYTES = 8 * 10**9
"""A stored run's arrays.npz is read only up to this many bytes unpacked (its arrays' headers
say it first, docs/SECURITY.md); a larger one makes the run damaged."""
# A publication's file (a figure) is read whole, up to this size.
MAX_PUBLISHED_FILE_BYTES = 256 * 10**6

# The store's own temporary names, exactly (tempfile's 8 random characters; keys and
# publication names are config_key's 16 hex digits), with the PID of the process that made them.
_PID = r"(?P<pid>[0-9]{1,10})"
_RANDOM = r"[a-z0-9_]{8}"
_KEY = r"[0-9a-f]{16}"
_FIGURES = "|".join(suffix[1:] for suffix in FIGURE_SUFFIXES)
_LINK_NAMES = (
    rf"latest|config\.json|summary\.json|metrics\.parquet|[A-Za-z0-9_-]+\.(?:{_FIGURES}|json)"
)
# (directory relative to the root, pattern, the kind of entry the store makes there)
TEMPORARY = (
    ("runs", re.compile(rf"\.{_KEY}-{_PID}-(?:{_RANDOM}|discarded)"), "directory"),
    ("outputs", re.compile(rf"\.{_KEY}-{_PID}-discarded"), "directory"),
    ("", re.compile(rf"\.staging-{_PID}-{_RANDOM}"), "directory"),
    ("", re.compile(rf"\.(?:{_LINK_NAMES})\.{_PID}\.(?:tmp|link)"), "file"),
)


class StoreBusy(ValueError):
    """Another live process holds the directory's lock (a ValueError: on the command line it is
    a usage error, exit code 2, not a crash)."""


class StoreReadOnly(ValueError):
    """The directory cannot be written (permissions, a read-only file system)."""


class DamagedRun(ValueError):
    """A stored run whose files cannot be read back."""


class UnsafeStore(ValueError):
    """Something in a results directory that the store did not make and will not follow or
    touch: a symbolic link or a file where its directories go, a `latest` pointing out of
    outputs/, a symbolic-link .lock, a file outside a publication (a ValueError: on the command
    line a usage error, exit code 2)."""


def open_regular(path: Path):
    """path opened for binary reading, through no symbolic link in its last two components
    (the run or publication directory and the file), and only if it is a regular file; OSError
    (ELOOP for a link) otherwise. Opening does not block on a FIFO."""
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    finally:
        os.close(directory)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


def read_regular(path: Path) -> bytes:
    with open_regular(path) as f:
        return f.read()


def plain_name(name) -> bool:
    """A file name within one directory: no separator, not "." or "..", not empty."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and "\0" not in name
    )


def create_new(path: Path, data: bytes) -> None:
    """Write a file that does not exist yet (never through a link someone put at its name)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


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


CHUNK = 1 << 20


def _digest(f, copy_to=None) -> dict:
    """Size and sha256 of what is left in the binary file f, read in chunks (each also
    written to the binary file `copy_to`, if given)."""
    digest, size = hashlib.sha256(), 0
    while chunk := f.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
        if copy_to is not None:
            copy_to.write(chunk)
    return {"bytes": size, "sha256": digest.hexdigest()}


def file_digest(path: Path) -> dict:
    """Size and sha256 of a regular file (no symbolic link followed)."""
    with open_regular(path) as f:
        return _digest(f)


def write_manifest(directory: Path, **fields) -> None:
    """manifest.json of every other file in `directory` (size, sha256), plus `fields`."""
    files = {
        p.name: file_digest(p)
        for p in sorted(directory.iterdir())
        if p.is_file() and not p.is_symlink() and p.name != MANIFEST
    }
    (directory / MANIFEST).write_text(json_text({"files": files, **fields}))


def read_manifest(directory: Path) -> dict[str, dict]:
    """{file name: {"bytes", "sha256"}} of a directory's manifest (OSError if it cannot be
    opened: FileNotFoundError if there is none); see parse_manifest."""
    return parse_manifest(read_regular(directory / MANIFEST))


def parse_manifest(data: bytes) -> dict[str, dict]:
    """{file name: {"bytes", "sha256"}} of a manifest's text; ValueError if it is unreadable
    or names anything but files of its own directory."""
    try:
        files = json.loads(data)["files"]
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"unreadable manifest ({err})") from err
    if not isinstance(files, dict):
        raise ValueError("unreadable manifest (no table of files)")
    for name, expected in files.items():
        if not plain_name(name) or name == MANIFEST:
            raise ValueError(f"the manifest names {name!r}, not a file of its directory")
        if not (
            isinstance(expected, dict)
            and isinstance(expected.get("bytes"), int)
            and isinstance(expected.get("sha256"), str)
        ):
            raise ValueError(f"unreadable manifest (entry of {name})")
    return files


def manifest_problem(directory: Path, deep: bool = True) -> str | None:
    """Why `directory` does not match its manifest (None if it does); without `deep`, only
    sizes are compared. Each file must be a regular file (not a symbolic link)."""
    try:
        files = read_manifest(directory)
    except FileNotFoundError:
        return "no manifest"
    except OSError as err:
        return f"manifest cannot be opened ({err.strerror or err})"
    except ValueError as err:
        return str(err)
    for name, expected in files.items():
        try:
            info = os.lstat(directory / name)
        except FileNotFoundError:
            return f"{name} is missing"
        if stat.S_ISLNK(info.st_mode):
            return f"{name} is a symbolic link"
        if not stat.S_ISREG(info.st_mode):
            return f"{name} is not a regular file"
        if info.st_size != expected["bytes"]:
            return f"{name} has {info.st_size} bytes, {expected['bytes']} expected"
        try:
            if deep and file_digest(directory / name)["sha256"] != expected["sha256"]:
                return f"{name} does not match its checksum"
        except OSError as err:
            return f"{name} cannot be read ({err.strerror or err})"
    return None


def copy_verified(source: Path, target: Path, expected: dict) -> None:
    """Copy the regular file `source` (no symbolic link followed) to the new file `target`,
    checking the bytes copied against `expected` (a manifest entry); ValueError if source
    cannot be opened or does not match (target is then left for the caller's temporary
    directory to remove)."""
    try:
        f = open_regular(source)
    except OSError as err:
        raise ValueError(f"{source} cannot be opened ({err.strerror or err})") from err
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with f, os.fdopen(fd, "wb") as out:
        copied = _digest(f, copy_to=out)
    if copied != {"bytes": expected["bytes"], "sha256": expected["sha256"]}:
        raise ValueError(f"{source} does not match its manifest")


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
    except (ProcessLookupError, OverflowError):  # no such process (or no such PID at all)
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Read once, at import (os.umask can only be read by setting it).
_DIRECTORY_MODE = 0o777 & ~_umask()


def _new_directory(parent: Path, prefix: str) -> Path:
    """A fresh, uniquely named directory in parent, with the permissions the user's umask gives
    (tempfile.mkdtemp makes it 0700, which would hide finished runs from a group that shares
    the results)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(path, _DIRECTORY_MODE)
    return path


class ResultsStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.runs = self.root / "runs"

    # --- runs ----------------------------------------------------------------------------

    def has(self, key: str) -> bool:
        """A run with this key was stored completely (its manifest is written last)."""
        d = self.runs / key
        return not d.is_symlink() and (d / MANIFEST).exists()

    def keys(self) -> list[str]:
        if not self.runs.is_dir():
            return []
        # Hidden names are writers' staging and discarded directories, never runs.
        return sorted(
            p.name
            for p in self.runs.iterdir()
            if not p.name.startswith(".") and not p.is_symlink() and (p / MANIFEST).exists()
        )

    def problem(self, key: str) -> str | None:
        """None if the run is stored intact; else "missing" or what is wrong with it."""
        d = self.runs / key
        if d.is_symlink():
            return "it is a symbolic link, not a run directory"
        if not d.exists():
            return "missing"
        if not d.is_dir():
            return "it is not a directory"
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
        tmp = _new_directory(self.runs, f".{key}-{os.getpid()}-")
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
        lacks, each atomically, and say how many; returns how many. Only the regular files its
        manifest names are copied, each checked against the manifest's sha256 as it is copied
        (no symbolic link is followed); a run that does not match is skipped, and said."""
        if not other.root.is_dir():
            raise ValueError(f"{other.root}: no such results directory to reuse runs from")
        if other.runs.is_symlink():
            raise UnsafeStore(f"{other.runs} is a symbolic link; refusing to reuse runs through it")
        copied = 0
        self.runs.mkdir(parents=True, exist_ok=True)
        for key in other.keys():
            if self.has(key) or other.problem(key) is not None:
                continue
            tmp = _new_directory(self.runs, f".{key}-{os.getpid()}-")
            try:
                _copy_run(other.runs / key, tmp)
                self._install(tmp, self.runs / key)
                copied += 1
            except ValueError as err:  # changed or replaced since it was checked
                logger.warning("run %s in %s not reused: %s", key, other.runs, err)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        logger.info("reused %d runs from %s", copied, other.root)
        return copied

    def _install(self, tmp: Path, final: Path) -> None:
        """Rename tmp to final; an intact final already there (a racing writer's) is kept, a
        damaged one (or anything else at its name) is moved aside first."""
        for _ in range(3):
            try:
                os.rename(tmp, final)
                return
            except OSError as err:
                if err.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                    raise
            if not final.is_symlink() and manifest_problem(final) is None:
                return
            self._discard(final)
        raise OSError(f"could not store run {final.name}: another process keeps replacing it")

    def _discard(self, directory: Path) -> None:
        """Remove a run directory: renamed out of sight first, so no reader sees it half gone
        (a symbolic link or file at its name is removed itself, never followed)."""
        aside = directory.with_name(f".{directory.name}-{os.getpid()}-discarded")
        try:
            os.rename(directory, aside)
        except FileNotFoundError:
            return
        _remove(aside)

    def discard(self, key: str) -> None:
        self._discard(self.runs / key)

    def load(self, key: str) -> RunRecord:
        """The stored run; DamagedRun if any of its files cannot be read (or is a symbolic
        link, or its arrays are larger than MAX_RUN_ARRAYS_BYTES)."""
        d = self.runs / key
        problem = manifest_problem(d, deep=False)  # sizes only: cheap, catches a torn copy
        if problem is not None:
            raise DamagedRun(f"run {key} in {self.runs} is damaged: {problem}")

        def read(name, parse, default):
            try:
                f = open_regular(d / name)
            except FileNotFoundError:
                return default
            with f:
                return parse(f)

        try:
            config = read("config.json", json.load, None)
            metrics = read("metrics.parquet", pq.read_table, None)
            arrays = read(
                "arrays.npz",
                lambda f: load_npz(
                    d / "arrays.npz", MAX_RUN_ARRAYS_BYTES, "attnbias.store.MAX_RUN_ARRAYS_BYTES", f
                ),
                {},
            )
            info = read("info.json", json.load, {})
        except (OSError, ValueError, EOFError, pa.ArrowException) as err:
            raise DamagedRun(f"run {key} in {self.runs} cannot be read: {err}") from err
        if config is None:
            raise DamagedRun(f"run {key} in {self.runs} cannot be read: config.json is missing")
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
                logger.warning(
                    "run %s in %s is damaged (%s); training it again", key, self.runs, problem
                )
                self.discard(key)
            todo.append(key)
        return todo

    def clean_leftovers(self) -> list[str]:
        """Remove the temporary directories and files of writers that died: only names that
        are exactly the store's own (TEMPORARY) and whose writer's PID is not alive; a symbolic
        link at such a name is removed itself, never followed. Returns the names removed."""
        removed = []
        for parent, pattern, kind in TEMPORARY:
            directory = self.root / parent
            if directory.is_symlink() or not directory.is_dir():
                continue
            with os.scandir(directory) as entries:
                for entry in entries:
                    match = pattern.fullmatch(entry.name)
                    if match is None or pid_alive(int(match["pid"])):
                        continue
                    # what the store makes at such a name, or a link put there (unlinked)
                    is_directory = entry.is_dir(follow_symlinks=False)
                    if entry.is_symlink() or is_directory == (kind == "directory"):
                        _remove(Path(entry.path))
                        removed.append(entry.name)
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
        tmp.unlink(missing_ok=True)  # a leftover of ours, or a link someone put there
        create_new(tmp, json_text(obj).encode())
        os.replace(tmp, path)
        return path

    # --- the layout ---------------------------------------------------------------------------

    def layout_problem(self) -> str | None:
        """What in the directory the store did not make and will not follow: a runs/,
        outputs/ or checkpoints/ that is a symbolic link or not a directory, a `latest` that
        is not a link to outputs/NAME; None if there is nothing."""
        for name in DIRECTORIES:
            try:
                mode = os.lstat(self.root / name).st_mode
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(mode):
                return f"{self.root / name} is a symbolic link"
            if not stat.S_ISDIR(mode):
                return f"{self.root / name} is not a directory"
        try:
            target = os.readlink(self.latest)
        except FileNotFoundError:
            return None
        except OSError:  # EINVAL: there, but not a link
            return f"{self.latest} is not a symbolic link"
        parts = Path(target).parts
        if len(parts) != 2 or parts[0] != "outputs" or not plain_name(parts[1]):
            return f"{self.latest} points to {target}, outside {self.root / 'outputs'}"
        if (self.root / target).is_symlink():
            return f"{self.root / target} is a symbolic link"
        return None

    def check_layout(self) -> None:
        """UnsafeStore naming what layout_problem found, if anything."""
        problem = self.layout_problem()
        if problem is not None:
            raise UnsafeStore(
                f"{problem}; the store never makes one and will not follow or touch it: "
                "remove it, or use another --out"
            )

    # --- one writer at a time --------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the directory's write lock: StoreBusy if a live process holds it (the kernel
        releases a dead holder's flock, so there are no stale locks); StoreReadOnly if the
        directory cannot be written; UnsafeStore if .lock is not a regular file of its own
        (a symbolic link is never opened) or the layout is not the store's (check_layout)."""
        path = self.root / ".lock"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise UnsafeStore(
                    f"{path} is a symbolic link; the store never makes one and will not open "
                    "it: remove it"
                ) from err
            if not isinstance(err, PermissionError) and err.errno != errno.EROFS:
                raise
            raise StoreReadOnly(f"{self.root} cannot be written ({err.strerror})") from err
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise UnsafeStore(
                    f"{path} is not a regular file of its own (a device, a FIFO or a hard link "
                    "to another file); the store will not write to it: remove it"
                )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                raise StoreBusy(
                    f"{self.root} is being written by PID {holder}; wait or use another --out"
                ) from None
            self.check_layout()
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
        """The current publication's directory, if any; UnsafeStore if the layout is not the
        store's (`latest` pointing out of outputs/, a linked outputs/: check_layout)."""
        self.check_layout()
        return self.latest.resolve() if self.latest.is_dir() else None

    def published_file(self, path: str | Path) -> bytes:
        """The bytes of one file of a publication, named as a summary names it: a path
        outputs/NAME/FILE inside this directory (relative to it, or this directory's path
        joined with it). UnsafeStore unless it is a regular file directly in outputs/NAME
        (no symbolic link, absolute or ".." name) whose bytes match the sha256 that
        publication's manifest gives for it."""
        path = Path(path)
        try:
            relative = path.relative_to(self.root)  # lexically: ".." stays ".."
        except ValueError:
            relative = path
        parts = relative.parts
        if relative.is_absolute() or len(parts) != 3 or parts[0] != "outputs":
            raise UnsafeStore(f"{path} is not a file of a publication in {self.root / 'outputs'}")
        if not all(plain_name(part) for part in parts[1:]) or parts[2] == MANIFEST:
            raise UnsafeStore(f"{path} is not a file of a publication in {self.root / 'outputs'}")
        self.check_layout()
        publication = self.root / "outputs" / parts[1]
        try:
            info = os.lstat(publication / parts[2])
            expected = read_manifest(publication).get(parts[2])
        except (OSError, ValueError) as err:
            raise UnsafeStore(f"{path} cannot be read from its publication ({err})") from err
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            raise UnsafeStore(f"{path} is {kind}, not a file of its publication")
        if expected is None:
            raise UnsafeStore(f"{path} is not listed in its publication's manifest")
        if not info.st_size == expected["bytes"] <= MAX_PUBLISHED_FILE_BYTES:
            raise UnsafeStore(
                f"{path} has {info.st_size} bytes, its manifest says {expected['bytes']} (at "
                f"most {MAX_PUBLISHED_FILE_BYTES} are read)"
            )
        try:
            data = read_regular(publication / parts[2])
        except OSError as err:
            raise UnsafeStore(f"{path} cannot be read from its publication ({err})") from err
        if hashlib.sha256(data).hexdigest() != expected["sha256"]:
            raise UnsafeStore(f"{path} does not match the sha256 in its publication's manifest")
        return data

    def staging(self) -> Path:
        """A fresh hidden directory to write a publication in; `runs` and `checkpoints` in it
        link to the experiment's own, so whatever writes there resumes and shares them."""
        self.runs.mkdir(parents=True, exist_ok=True)
        (self.root / "checkpoints").mkdir(exist_ok=True)
        stage = _new_directory(self.root, f".staging-{os.getpid()}-")
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
        if final.exists() or final.is_symlink():  # an earlier publication of this config
            self._discard(final)
        os.rename(stage, final)
        self._link(self.latest, Path("outputs") / name)
        for p in final.iterdir():
            if p.name in LINKED or p.suffix in FIGURE_SUFFIXES:
                self._link(self.root / p.name, Path("latest") / p.name)
        checkpoints = self.root / "checkpoints"
        if not checkpoints.is_symlink() and checkpoints.is_dir() and not any(checkpoints.iterdir()):
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


def _copy_run(source: Path, target: Path) -> None:
    """Copy the run directory `source` into the new directory `target`: the files its manifest
    names, each checked against it as it is copied, then the manifest; ValueError if source
    does not match it (or cannot be opened)."""
    try:
        manifest = read_regular(source / MANIFEST)
    except OSError as err:
        raise ValueError(f"its manifest cannot be opened ({err.strerror or err})") from err
    for name, expected in parse_manifest(manifest).items():
        copy_verified(source / name, target / name, expected)
    create_new(target / MANIFEST, manifest)  # last: the run is complete


def _remove(path: Path) -> None:
    """Remove a directory tree, or a file or symbolic link (itself, never what it points to)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)  # fd-based: links inside are not followed
    else:
        path.unlink(missing_ok=True)


def _scalars(config: Mapping, prefix: str = ""):
    """(name, value) of the scalar fields of a config, nested tables flattened to "a.b"."""
    for name, value in config.items():
        if isinstance(value, Mapping):
            yield from _scalars(value, f"{prefix}{name}.")
        elif isinstance(value, (int, float, str, bool)):
            yield f"{prefix}{name}", value
