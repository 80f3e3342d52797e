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
    <root>/.attnbias-store             the store's mark: it made this directory

A run directory is written beside its final place and renamed into it, manifest last, so a
sweep killed at any moment loses no finished run; a run whose files do not match its manifest
is reported and trained again; leftovers of killed writers are removed by the next writer.

The directory may be shared with others (docs/SECURITY.md). Every file in it is reached from
an open handle of the directory (dir_fd), one component at a time, never through a symbolic
link the store did not make, and checked again at each use, not only when the lock is taken.
The store writes only into a directory it made (its mark), or one that holds nothing but the
store's own names (adopted: marked); it replaces only its own links, deletes only its own
temporary names whose writer is dead, and copies only regular files that match their
manifest's sha256.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import json
import logging
import math
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc  # not loaded by `import pyarrow`
import pyarrow.parquet as pq

from .arrow_columns import numeric_column, repeated_column, string_column
from .nesting import check_nesting
from .npz import load_npz
from .provenance import environment

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
MARKER = ".attnbias-store"
"""The file that marks an experiment directory as made (or adopted) by the store."""
MAX_RUN_ARRAYS_BYTES = 8 * 10**9
"""A stored run's arrays.npz is read only up to this many bytes unpacked (its arrays' headers
say it first, docs/SECURITY.md); a larger one makes the run damaged."""
# a run's arrays up to this size are written from memory (one write, digested as written);
# larger ones (a real model's) stream to their file and are read back for the digest
BUFFERED_BYTES = 1 << 24
# A publication's file (a figure) is read whole, up to this size.
MAX_PUBLISHED_FILE_BYTES = 256 * 10**6
# A manifest is read whole, up to this size (a publication's lists its runs' keys).
MAX_MANIFEST_BYTES = 64 * 10**6
MAX_JSON_BYTES = 64 * 10**6
"""A run's config.json or info.json is read only up to this many bytes."""
MAX_JSON_NESTING = 64
"""JSON the store reads (a run's config.json and info.json, a manifest, a summary) nests at
most this deep, checked before it is parsed: what attnbias writes nests 9 levels at most, and
json's parser recurses once a level (100,000 levels are a RecursionError)."""
MAX_METRICS_BYTES = 2 * 10**9
"""A stored run's metrics.parquet is read only if its table takes at most this many bytes
decoded, as its metadata declares it (read_parquet)."""

# The store's own temporary names, exactly (8 random characters; keys and publication names
# are config_key's 16 hex digits), with the PID of the process that made them.
_PID = r"(?P<pid>[0-9]{1,10})"
_RANDOM = r"[a-z0-9_]{8}"
_KEY = r"[0-9a-f]{16}"
_FIGURES = "|".join(suffix[1:] for suffix in FIGURE_SUFFIXES)
_LINK_NAMES = (
    rf"latest|config\.json|summary\.json|metrics\.parquet|[A-Za-z0-9_-]+\.(?:{_FIGURES}|json)"
)
STAGING = re.compile(rf"\.staging-{_PID}-{_RANDOM}")
# (directory relative to the root, pattern, the kind of entry the store makes there)
TEMPORARY = (
    ("runs", re.compile(rf"\.{_KEY}-{_PID}-(?:{_RANDOM}|discarded)"), "directory"),
    ("outputs", re.compile(rf"\.{_KEY}-{_PID}-discarded"), "directory"),
    ("", STAGING, "directory"),
    ("", re.compile(rf"\.(?:{_LINK_NAMES})\.{_PID}\.(?:tmp|link)"), "file"),
)
# Names the store puts in an experiment directory (beside DIRECTORIES and TEMPORARY ones).
_FIGURE_NAME = re.compile(rf"[A-Za-z0-9_-]+\.(?:{_FIGURES})")
_OWN_NAMES = (*DIRECTORIES, "latest", ".lock", MARKER, *LINKED)

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


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
    outputs/, a symbolic-link .lock, a file outside a publication, a directory it did not make
    (a ValueError: on the command line a usage error, exit code 2)."""


class UnsafeCheckpoint(UnsafeStore):
    """A run's checkpoint directory or file that is not one attnbias wrote: not followed, not
    loaded (real.train and CheckpointDirectory raise it)."""


class FileTooLarge(ValueError):
    """A file larger than the bytes its reader takes (`size`: what it holds, `limit`)."""

    def __init__(self, shown, size: int, limit: int):
        super().__init__(f"{shown} has {size} bytes, more than the {limit} read")
        self.size, self.limit = size, limit


def refused(problem: str) -> UnsafeStore:
    """The UnsafeStore naming `problem`: something the store did not make, left as it is."""
    return UnsafeStore(
        f"{problem}; the store never makes one and will not follow or touch it: "
        "remove it, or use another --out"
    )


# --- files reached from a directory handle ------------------------------------------------------


def open_directory(name, dir_fd: int | None, shown: Path) -> int:
    """A handle of the directory `name` (in dir_fd), never opened through a symbolic link:
    UnsafeStore if it is a link or not a directory, FileNotFoundError if it is not there;
    `shown` is its path in messages."""
    try:
        return os.open(name, _DIRECTORY, dir_fd=dir_fd)
    except OSError as err:
        if err.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
    try:
        is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:  # gone meanwhile
        raise refused(f"{shown} was replaced while it was opened") from None
    raise refused(f"{shown} is {'a symbolic link' if is_link else 'not a directory'}")


def open_file_at(dir_fd: int, name: str, shown) -> int:
    """A read handle of the regular file `name` in dir_fd (no symbolic link followed, no
    blocking on a FIFO); OSError (ELOOP for a link, EINVAL for anything not a regular file)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(shown))
    return fd


def read_at(dir_fd: int, name: str, limit: int, shown) -> bytes:
    """The bytes of a regular file in dir_fd, refused (FileTooLarge) if larger than `limit`,
    also if it grew past it after it was measured: never more than limit + 1 are read."""
    with os.fdopen(open_file_at(dir_fd, name, shown), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise FileTooLarge(shown, size, limit)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(shown, len(data), limit)
    return data


def parse_json(data: bytes, shown, limit: int = MAX_JSON_BYTES):
    """The JSON value of a file's bytes; ValueError naming `shown` if they are more than
    `limit` bytes, not UTF-8, nested deeper than MAX_JSON_NESTING (checked before the parser
    recurses into them) or not JSON."""
    if len(data) > limit:
        raise FileTooLarge(shown, len(data), limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{shown} is not UTF-8 text ({err})") from err
    check_nesting(text, str(shown), MAX_JSON_NESTING)
    return json.loads(text)


def read_parquet(f, shown, limit: int = MAX_METRICS_BYTES) -> pa.Table:
    """The table of the Parquet file open in f, read only if it takes at most `limit` bytes
    decoded: first as its metadata declares (every column chunk's size unpacked, and each
    row's fixed-width values), then its text columns, read as dictionaries (each distinct
    value once), as the dense columns they become. ValueError naming `shown` otherwise,
    before that much is allocated."""
    source = pq.ParquetFile(f)
    meta, schema = source.metadata, source.schema_arrow
    unpacked = sum(
        meta.row_group(g).column(c).total_uncompressed_size
        for g in range(meta.num_row_groups)
        for c in range(meta.num_columns)
    )
    row = sum(_value_bytes(column.type) for column in schema)
    declared = max(unpacked, math.ceil(meta.num_rows * row))
    if declared > limit:
        raise ValueError(
            f"{shown}: its metadata gives {declared:,} bytes decoded ({meta.num_rows:,} rows), "
            f"more than the {limit:,} read"
        )
    text = [i for i, column in enumerate(schema) if _is_text(column.type)]
    if not text:
        return source.read()
    table = pq.ParquetFile(f, read_dictionary=[schema[i].name for i in text]).read()
    dense = table.nbytes
    for i in text:
        for chunk in table.column(i).chunks:  # each value's bytes and offset, once per row
            lengths = pc.binary_length(chunk.dictionary)
            values = pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0
            dense += values + 8 * (len(chunk) + 1) - chunk.nbytes
    if dense > limit:
        raise ValueError(
            f"{shown}: its table takes {dense:,} bytes decoded, more than the {limit:,} read"
        )
    for i in text:
        table = table.set_column(i, schema[i], table.column(i).cast(schema[i].type))
    return table


def _is_text(kind: pa.DataType) -> bool:
    return any(
        test(kind)
        for test in (pa.types.is_string, pa.types.is_binary, pa.types.is_large_string,
                     pa.types.is_large_binary)
    )  # fmt: skip


def _value_bytes(kind: pa.DataType) -> float:
    """The least bytes one value of a column of this type takes decoded (a text's offset)."""
    try:
        return kind.bit_width / 8
    except ValueError:  # not fixed-width: an offset of 4 bytes at least
        return 4


def write_new_at(dir_fd: int, name: str, data: bytes | None = None, writer=None) -> None:
    """Create the file `name` in dir_fd, which must not exist yet (never written through a
    link someone put there): its bytes are `data`, or what writer(binary file) writes (a
    library that wants a path gets this file object instead)."""
    fd = os.open(name, _NEW_FILE, 0o644, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as f:
        if writer is not None:
            writer(f)
        else:
            f.write(data)


def replace_at(dir_fd: int, name: str, data: bytes | None = None, writer=None) -> None:
    """Write `name` in dir_fd atomically: a fresh temporary file renamed over it."""
    tmp = f".{name}.{os.getpid()}.tmp"
    remove_at(dir_fd, tmp)  # a leftover of ours, or a link someone put there (itself)
    try:
        write_new_at(dir_fd, tmp, data, writer)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:  # a writer that failed (or a rename refused) leaves no partial file
        remove_at(dir_fd, tmp)
        raise


def remove_at(dir_fd: int, name: str, depth: int = 0) -> None:
    """Remove `name` in dir_fd: a directory tree, or a file or symbolic link (itself, never
    what it points to); what cannot be removed (or lies deeper than 32 levels) is left."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        if not stat.S_ISDIR(mode):
            os.unlink(name, dir_fd=dir_fd)
            return
        if depth < 32:
            fd = os.open(name, _DIRECTORY, dir_fd=dir_fd)
            try:
                for entry in os.listdir(fd):
                    remove_at(fd, entry, depth + 1)
            finally:
                os.close(fd)
        os.rmdir(name, dir_fd=dir_fd)
    except OSError:
        pass


def fresh_directory_at(dir_fd: int, prefix: str) -> str:
    """The name of a new, uniquely named directory made in dir_fd, with the permissions the
    user's umask gives (a private 0700 would hide finished runs from a group sharing them)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_"
    for _ in range(100):
        name = prefix + "".join(secrets.choice(alphabet) for _ in range(8))
        try:
            os.mkdir(name, 0o777, dir_fd=dir_fd)
            return name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", prefix)


def open_path(path: Path) -> int:
    """A handle of the directory `path`: the components above its last are followed (they are
    the user's), the last one is never a symbolic link (UnsafeStore)."""
    path = Path(path)
    if path.name in ("", ".", ".."):
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return open_directory(path.name, parent, path)
    finally:
        os.close(parent)


def write_into(directory: Path, name: str, data: bytes | None = None, writer=None) -> Path:
    """Write the file `name` of `directory` atomically (replace_at: bytes `data`, or what
    writer(binary file) writes), never through a link: a store's staging directory is reached
    from its store's handles (ResultsStore.write_file), any other directory is made if missing
    and opened by open_path (the components above its last are the user's)."""
    directory = Path(directory)
    if STAGING.fullmatch(directory.name):
        return ResultsStore(directory).write_file(name, data, writer)
    if not plain_name(name):
        raise ValueError(f"write_into: {name!r} is not a file name")
    directory.mkdir(parents=True, exist_ok=True)
    fd = open_path(directory)
    try:
        replace_at(fd, name, data, writer)
    finally:
        os.close(fd)
    return directory / name


def open_regular(path: Path):
    """path opened for binary reading, through no symbolic link in its last two components
    (the run or publication directory and the file), and only if it is a regular file; OSError
    (ELOOP for a link) otherwise. Opening does not block on a FIFO."""
    directory = os.open(path.parent, _DIRECTORY)
    try:
        return os.fdopen(open_file_at(directory, path.name, path), "rb")
    finally:
        os.close(directory)


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
    fd = os.open(path, _NEW_FILE, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def own_link(name: str, target: str) -> bool:
    """Whether a link `name` → `target` in an experiment directory is one the store makes:
    `latest` → outputs/NAME, any other name → latest/<that name>."""
    parts = Path(target).parts
    if name == "latest":
        return len(parts) == 2 and parts[0] == "outputs" and plain_name(parts[1])
    return target == f"latest/{name}"


def own_name(name: str) -> bool:
    """A name the store puts in an experiment directory."""
    return (
        name in _OWN_NAMES
        or _FIGURE_NAME.fullmatch(name) is not None
        or any(parent == "" and pattern.fullmatch(name) for parent, pattern, _ in TEMPORARY)
    )


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
    values = []
    for name, col in metrics.items():
        if not isinstance(name, str):
            raise TypeError(f"metric names must be str, got {name!r}")
        col = np.asarray(col, dtype=np.float64)
        if col.shape != steps.shape:
            raise ValueError(
                f"metric {name!r} has {col.shape[0]} values for {steps.shape[0]} steps"
            )
        values.append(col)
    names = list(metrics)
    return pa.table(
        {
            "step": numeric_column(np.tile(steps, len(names))),
            # no rows: null-typed, as pyarrow types an empty column of objects
            "metric": string_column(names, len(steps)) if names and len(steps) else pa.nulls(0),
            "value": numeric_column(np.concatenate(values) if values else np.empty(0)),
        }
    )


# tidy's columns, and the types a reader may rely on (an empty table's metric is null-typed)
METRICS_COLUMNS = {
    "step": pa.types.is_integer,
    "metric": lambda kind: pa.types.is_string(kind) or pa.types.is_null(kind),
    "value": pa.types.is_floating,
}


def metrics_problem(schema: pa.Schema) -> str | None:
    """What keeps a metrics table from having tidy's columns (step, metric, value), or None."""
    for name, fits in METRICS_COLUMNS.items():
        index = schema.get_field_index(name)
        if index < 0:
            return f"has no column {name!r} (it has {', '.join(schema.names) or 'none'})"
        if not fits(schema.field(index).type):
            return f"has a column {name!r} of type {schema.field(index).type}"
    return None


CHUNK = 1 << 20


def digest_of(data: bytes) -> dict:
    """Size and sha256 of bytes, as a manifest lists a file."""
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _stream_digest(f, copy_to=None) -> dict:
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
        return _stream_digest(f)


def digest_at(dir_fd: int, name: str) -> dict:
    """Size and sha256 of the regular file `name` in dir_fd (no link followed)."""
    with os.fdopen(open_file_at(dir_fd, name, name), "rb") as f:
        return _stream_digest(f)


def write_manifest_at(dir_fd: int, **fields) -> None:
    """manifest.json of every other regular file in the directory dir_fd (size, sha256), plus
    `fields`; written fresh and renamed in (a link put at its name is replaced, not followed)."""
    files = {}
    for name in sorted(os.listdir(dir_fd)):
        if name == MANIFEST or not stat.S_ISREG(
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        ):
            continue
        files[name] = digest_at(dir_fd, name)
    replace_at(dir_fd, MANIFEST, json_text({"files": files, **fields}).encode())


def write_files_at(dir_fd: int, files: Mapping[str, bytes | Callable], **fields) -> None:
    """Create each file of `files` in dir_fd, none of which may exist yet, then, last, their
    manifest.json (as write_manifest_at's), plus `fields`. A file is given as its bytes (its
    digest is taken of them: it is not read back) or as a writer(binary file), for contents
    too large to hold twice in memory (read back for its digest). For a directory of one's
    own making: a name already taken (a link put there included) is refused, not replaced."""
    listed = {}
    for name, content in files.items():
        if callable(content):
            write_new_at(dir_fd, name, writer=content)
            listed[name] = digest_at(dir_fd, name)
        else:
            write_new_at(dir_fd, name, content)
            listed[name] = digest_of(content)
    listed = {name: listed[name] for name in sorted(listed)}
    write_new_at(dir_fd, MANIFEST, json_text({"files": listed, **fields}).encode())


def bytes_written(writer) -> bytes:
    """What writer(binary file) writes, as bytes (a library that wants a file gets an
    in-memory one: the same bytes as written to a file, in one write after)."""
    buffer = io.BytesIO()
    writer(buffer)
    return buffer.getvalue()


def write_manifest(directory: Path, **fields) -> None:
    """manifest.json of every other file in `directory` (size, sha256), plus `fields`."""
    fd = open_path(directory)
    try:
        write_manifest_at(fd, **fields)
    finally:
        os.close(fd)


def read_manifest(directory: Path) -> dict[str, dict]:
    """{file name: {"bytes", "sha256"}} of a directory's manifest (OSError if it cannot be
    opened: FileNotFoundError if there is none); see parse_manifest."""
    fd = open_path(directory)
    try:
        return parse_manifest(read_at(fd, MANIFEST, MAX_MANIFEST_BYTES, directory / MANIFEST))
    finally:
        os.close(fd)


def parse_manifest(data: bytes) -> dict[str, dict]:
    """{file name: {"bytes", "sha256"}} of a manifest's text; ValueError if it is unreadable
    or names anything but files of its own directory."""
    return _manifest_fields(data)["files"]


def _manifest_fields(data: bytes) -> dict:
    """A manifest's whole table, its "files" checked (see parse_manifest) and its "runs", if
    any, a list of names; ValueError if it has another shape."""
    try:
        manifest = parse_json(data, MANIFEST, MAX_MANIFEST_BYTES)
        files = manifest["files"]
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
    runs = manifest.get("runs")
    if runs is not None and not (isinstance(runs, list) and all(map(plain_name, runs))):
        raise ValueError("unreadable manifest (its runs are not a list of run keys)")
    return manifest


def manifest_problem_at(dir_fd: int, shown: Path, deep: bool = True) -> str | None:
    """Why the directory dir_fd does not match its manifest (None if it does); without
    `deep`, only sizes are compared. Each file must be a regular file (not a symbolic link)."""
    try:
        files = parse_manifest(read_at(dir_fd, MANIFEST, MAX_MANIFEST_BYTES, shown / MANIFEST))
    except FileNotFoundError:
        return "no manifest"
    except OSError as err:
        return f"manifest cannot be opened ({err.strerror or err})"
    except ValueError as err:
        return str(err)
    for name, expected in files.items():
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return f"{name} is missing"
        if stat.S_ISLNK(info.st_mode):
            return f"{name} is a symbolic link"
        if not stat.S_ISREG(info.st_mode):
            return f"{name} is not a regular file"
        if info.st_size != expected["bytes"]:
            return f"{name} has {info.st_size} bytes, {expected['bytes']} expected"
        if not deep:
            continue
        try:
            with os.fdopen(open_file_at(dir_fd, name, shown / name), "rb") as f:
                if _stream_digest(f)["sha256"] != expected["sha256"]:
                    return f"{name} does not match its checksum"
        except OSError as err:
            return f"{name} cannot be read ({err.strerror or err})"
    return None


def manifest_problem(directory: Path, deep: bool = True) -> str | None:
    """Why `directory` does not match its manifest (None if it does); see manifest_problem_at.
    The directory itself must not be a symbolic link."""
    try:
        fd = open_path(directory)
    except FileNotFoundError:
        return "no manifest"
    except UnsafeStore as err:
        return str(err)
    try:
        return manifest_problem_at(fd, Path(directory), deep)
    finally:
        os.close(fd)


def copy_verified_at(
    source_fd: int, target_fd: int, name: str, expected: dict, shown, target: str | None = None
) -> None:
    """Copy the regular file `name` of source_fd (no symbolic link followed) to a new file
    `target` (default: the same name) in target_fd, checking the bytes copied against
    `expected` (a manifest entry); ValueError if the source cannot be opened or does not match
    (the target is then left for the caller's temporary directory to remove)."""
    try:
        f = os.fdopen(open_file_at(source_fd, name, shown), "rb")
    except OSError as err:
        raise ValueError(f"{shown} cannot be opened ({err.strerror or err})") from err
    copied = {}
    with f:
        write_new_at(
            target_fd,
            target or name,
            writer=lambda out: copied.update(_stream_digest(f, copy_to=out)),
        )
    if copied != {"bytes": expected["bytes"], "sha256": expected["sha256"]}:
        raise ValueError(f"{shown} does not match its manifest")


def copy_verified(source: Path, target: Path, expected: dict) -> None:
    """Copy the regular file `source` to the new file `target`, as copy_verified_at does."""
    with ExitStack() as stack:
        fds = [os.open(p.parent, _DIRECTORY) for p in (source, target)]
        for fd in fds:
            stack.callback(os.close, fd)
        copy_verified_at(fds[0], fds[1], source.name, expected, source, target.name)


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


class ResultsStore:
    """The results of one experiment in the directory `root` (its runs, publications and
    lock). A store made on a staging directory (what an experiment's run(config, out) gets)
    stores its runs in the experiment directory's runs/, as the staging link leads."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        # The experiment directory: root, or the one a staging directory of the store sits in.
        self.directory = self.root.parent if STAGING.fullmatch(self.root.name) else self.root
        self.runs = self.directory / "runs"
        self._stages: dict[str, tuple[int, int]] = {}  # staging name → (device, inode)

    # --- the directory, reached by handles --------------------------------------------------

    @contextmanager
    def _open(self, *parts: str, create: bool = False) -> Iterator[int]:
        """A handle of the experiment directory (or of parts under it, e.g. "runs"), each
        component opened without following a link, checked again at each use. With `create`,
        for writing: missing directories are made, and the experiment directory must be the
        store's (claim). FileNotFoundError if something is missing (without create)."""
        with ExitStack() as stack:
            if create and self.directory.name not in ("", ".", ".."):
                self.directory.parent.mkdir(parents=True, exist_ok=True)  # the user's own
                parent = os.open(self.directory.parent, os.O_RDONLY | os.O_DIRECTORY)
                stack.callback(os.close, parent)
                made = _make_directory(parent, self.directory.name)
                fd = open_directory(self.directory.name, parent, self.directory)
                stack.callback(os.close, fd)
                self._claim(fd, made)
            else:
                fd = open_path(self.directory)
                stack.callback(os.close, fd)
                if create:
                    self._claim(fd, made=False)
            shown = self.directory
            for part in parts:
                shown = shown / part
                if create:
                    _make_directory(fd, part)
                fd = open_directory(part, fd, shown)
                stack.callback(os.close, fd)
            yield fd

    def _claim(self, fd: int, made: bool) -> None:
        """The experiment directory (fd) is the store's: it bears MARKER, or it was just made,
        or it holds only names the store makes (an empty directory, or one an earlier version
        wrote), and is marked now; UnsafeStore otherwise (the store writes into no directory
        of someone else's)."""
        try:
            mode = os.stat(MARKER, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None:
            if not stat.S_ISREG(mode):
                raise refused(f"{self.directory / MARKER} is not the store's mark (a link?)")
            return
        if not made:
            foreign = sorted(name for name in os.listdir(fd) if not own_name(name))
            if foreign:
                raise UnsafeStore(
                    f"{self.directory} was not made by attnbias (no {MARKER}) and holds "
                    f"{foreign[0]!r}{f' and {len(foreign) - 1} more' if len(foreign) > 1 else ''}"
                    "; the store writes only into a directory it made: move that away, or use "
                    "another --out"
                )
        try:
            write_new_at(fd, MARKER, b"made by attnbias: a results store (docs/SECURITY.md)\n")
        except FileExistsError:  # another writer marked it meanwhile
            self._claim(fd, made=True)

    # --- runs ----------------------------------------------------------------------------

    def _run_stat(self, key) -> tuple[int, os.stat_result] | None:
        """(handle of runs/, lstat of runs/key) if the store holds runs/ and key is a plain
        name (the caller closes the handle); None otherwise."""
        if not plain_name(key):
            return None
        try:
            with self._open() as fd:
                runs = open_directory("runs", fd, self.runs)
        except FileNotFoundError:
            return None
        try:
            return runs, os.stat(key, dir_fd=runs, follow_symlinks=False)
        except FileNotFoundError:
            os.close(runs)
            return None

    def has(self, key: str) -> bool:
        """A run with this key was stored completely (its manifest is written last)."""
        found = self._run_stat(key)
        if found is None:
            return False
        runs, info = found
        try:
            return stat.S_ISDIR(info.st_mode) and _exists(runs, f"{key}/{MANIFEST}")
        finally:
            os.close(runs)

    def keys(self) -> list[str]:
        """The keys of the stored runs (runs/KEY with a manifest), sorted; [] when none."""
        try:
            with self._open("runs") as runs:
                # Hidden names are writers' staging and discarded directories, never runs.
                return sorted(
                    name
                    for name in os.listdir(runs)
                    if not name.startswith(".")
                    and _is_directory(runs, name)
                    and _exists(runs, f"{name}/{MANIFEST}")
                )
        except FileNotFoundError:
            return []

    def problem(self, key: str) -> str | None:
        """None if the run is stored intact; else "missing" or what is wrong with it."""
        found = self._run_stat(key)
        if found is None:
            return "missing"
        runs, info = found
        try:
            if stat.S_ISLNK(info.st_mode):
                return "it is a symbolic link, not a run directory"
            if not stat.S_ISDIR(info.st_mode):
                return "it is not a directory"
            return _problem_in(runs, key, self.runs / key, deep=True)
        finally:
            os.close(runs)

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
        return self.save_record(config, metrics, arrays, info, key).key

    def save_record(
        self,
        config: Mapping,
        metrics: pa.Table | None = None,
        arrays: Mapping | None = None,
        info: Mapping | None = None,
        key: str | None = None,
    ) -> RunRecord:
        """As `save`; returns the run as `load` reads it back (config and info parsed from the
        JSON written, copies of the arrays), without reading the files again."""
        key = key or config_key(config)
        if not plain_name(key):
            raise ValueError(f"save: key {key!r} is not a file name")
        info = {"provenance": environment(), **(info or {})}  # where it was made
        with self._open("runs", create=True) as runs:
            # The writer's PID in the name lets a later writer tell a leftover from live work.
            tmp = fresh_directory_at(runs, f".{key}-{os.getpid()}-")
            try:
                fd = open_directory(tmp, runs, self.runs / tmp)
                try:
                    files = {}
                    if metrics is not None:
                        files["metrics.parquet"] = bytes_written(partial(pq.write_table, metrics))
                    if arrays:
                        save = partial(np.savez, **arrays)
                        small = sum(np.asarray(a).nbytes for a in arrays.values()) <= BUFFERED_BYTES
                        files["arrays.npz"] = bytes_written(save) if small else save
                    info_text = json_text(info)
                    config_text = json.dumps(dict(config), default=str, indent=1)
                    files["info.json"] = info_text.encode()
                    files["config.json"] = config_text.encode()
                    write_files_at(fd, files, key=key, status=info.get("status", FINISHED))
                finally:
                    os.close(fd)
                self._install(runs, tmp, key)
            finally:
                remove_at(runs, tmp)
        kept = {name: np.array(a) for name, a in (arrays or {}).items()}
        return RunRecord(key, json.loads(config_text), metrics, kept, json.loads(info_text))

    def copy_runs_from(self, other: ResultsStore) -> int:
        """Copy in the intact runs of another store (which may be read-only) that this one
        lacks, each atomically, and say how many; returns how many. Only the regular files its
        manifest names are copied, each checked against the manifest's sha256 as it is copied
        (no symbolic link is followed); a run that does not match is skipped, and said."""
        try:
            with other._open():
                pass
        except FileNotFoundError:
            raise ValueError(
                f"{other.directory}: no such results directory to reuse runs from"
            ) from None
        copied = 0
        for key in other.keys():
            if self.has(key) or other.problem(key) is not None:
                continue
            with other._open("runs") as source, self._open("runs", create=True) as runs:
                tmp = fresh_directory_at(runs, f".{key}-{os.getpid()}-")
                try:
                    _copy_run(source, key, runs, tmp, other.runs / key)
                    self._install(runs, tmp, key)
                    copied += 1
                except ValueError as err:  # changed or replaced since it was checked
                    logger.warning("run %s in %s not reused: %s", key, other.runs, err)
                finally:
                    remove_at(runs, tmp)
        logger.info("reused %d runs from %s", copied, other.root)
        return copied

    def _install(self, runs: int, tmp: str, key: str) -> None:
        """Rename runs/tmp to runs/key; an intact run already there (a racing writer's) is
        kept, a damaged one (or anything else at its name) is moved aside first."""
        for _ in range(3):
            try:
                os.rename(tmp, key, src_dir_fd=runs, dst_dir_fd=runs)
                return
            except OSError as err:
                if err.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                    raise
            if _problem_in(runs, key, self.runs / key, deep=True) is None:
                return
            _discard_at(runs, key)
        raise OSError(f"could not store run {key}: another process keeps replacing it")

    def discard(self, key: str) -> None:
        """Remove the stored run `key`, if there is one (renamed out of sight first, so no
        reader sees it half gone); ValueError if `key` is not a plain file name."""
        if not plain_name(key):
            raise ValueError(f"discard: key {key!r} is not a file name")
        try:
            with self._open("runs") as runs:
                _discard_at(runs, key)
        except FileNotFoundError:
            pass

    def load(self, key: str) -> RunRecord:
        """The stored run; DamagedRun if any of its files cannot be read (or is a symbolic
        link, or its arrays are larger than MAX_RUN_ARRAYS_BYTES), or its config does not hash
        to its key (config_key: runs are stored under their config's hash)."""
        d = self.runs / key
        found = self._run_stat(key)
        if found is None:
            raise DamagedRun(f"run {key} in {self.runs} is damaged: no manifest")
        runs, info = found
        with ExitStack() as stack:
            stack.callback(os.close, runs)
            try:
                fd = open_directory(key, runs, d)
            except (UnsafeStore, OSError) as err:
                raise DamagedRun(f"run {key} in {self.runs} is damaged: {err}") from err
            stack.callback(os.close, fd)
            problem = manifest_problem_at(fd, d, deep=False)  # sizes only: catches a torn copy
            if problem is not None:
                raise DamagedRun(f"run {key} in {self.runs} is damaged: {problem}")

            def read(name, parse, default):
                try:
                    f = os.fdopen(open_file_at(fd, name, d / name), "rb")
                except FileNotFoundError:
                    return default
                with f:
                    return parse(f)

            def read_json(name, default):
                try:
                    return parse_json(read_at(fd, name, MAX_JSON_BYTES, d / name), d / name)
                except FileNotFoundError:
                    return default

            try:
                config = read_json("config.json", None)
                metrics = read(
                    "metrics.parquet",
                    lambda f: read_parquet(f, d / "metrics.parquet", MAX_METRICS_BYTES),
                    None,
                )
                arrays = read(
                    "arrays.npz",
                    lambda f: load_npz(
                        d / "arrays.npz",
                        MAX_RUN_ARRAYS_BYTES,
                        "attnbias.store.MAX_RUN_ARRAYS_BYTES",
                        f,
                    ),
                    {},
                )
                info = read_json("info.json", {})
            except (OSError, ValueError, EOFError, pa.ArrowException) as err:
                raise DamagedRun(f"run {key} in {self.runs} cannot be read: {err}") from err
        if config is None:
            raise DamagedRun(f"run {key} in {self.runs} cannot be read: config.json is missing")
        problem = None if metrics is None else metrics_problem(metrics.schema)
        if problem is not None:
            raise DamagedRun(f"run {key} in {self.runs} cannot be read: metrics.parquet {problem}")
        if not isinstance(config, dict) or not isinstance(info, dict):
            raise DamagedRun(
                f"run {key} in {self.runs} cannot be read: config.json or info.json is not a "
                "JSON object"
            )
        if config_key(config) != key:  # a forged config would be run as its key's spec
            raise DamagedRun(
                f"run {key} in {self.runs} is damaged: its config.json hashes to "
                f"{config_key(config)}, not to its key"
            )
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
        try:
            with self._open() as fd:
                return _clean_leftovers(fd)
        except FileNotFoundError:
            return []

    def table(self, keys=None, records=None) -> pa.Table:
        """Every run's metrics in one tidy table, with the run key and its scalar config fields,
        nested ones as "table.field" (of the given keys, or of records already loaded)."""
        parts = []
        if records is None:
            records = [self.load(key) for key in (keys if keys is not None else self.keys())]
        for rec in records:
            if rec.metrics is None:
                continue
            t = rec.metrics
            fields = [("run", rec.key), ("status", rec.status), *_scalars(rec.config)]
            fields = [(n, math.inf if n in INFINITE_NUMBERS and v == "inf" else v)
                      for n, v in fields]  # fmt: skip
            for name, value in fields:  # (one value repeated: built in arrow, not as a list)
                t = t.append_column(name, repeated_column(value, t.num_rows))
            parts.append(t)
        return pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})

    def write_json(self, name: str, obj) -> Path:
        """Atomically write an experiment-level strict-JSON file (a fresh file renamed over
        `name`; a link put at its temporary name is replaced, never written through)."""
        if not plain_name(name) or name in (*DIRECTORIES, "latest", ".lock", MARKER):
            raise ValueError(f"write_json: {name!r} is not a file name of its own")
        with self._open(create=True) as fd:
            replace_at(fd, name, json_text(obj).encode())
        return self.directory / name

    def write_file(self, name: str, data: bytes | None = None, writer=None) -> Path:
        """Write the file `name` of this store's root (an experiment's `out`: a staging
        directory) atomically, reached from the experiment directory's handle, never through a
        link: its bytes are `data`, or what writer(binary file) writes (pyarrow, numpy and
        matplotlib take a file object where they would take a path)."""
        if not plain_name(name):
            raise ValueError(f"write_file: {name!r} is not a file name")
        with self._open(create=True) as root:
            if self.root == self.directory:
                replace_at(root, name, data, writer)
            else:
                fd = open_directory(self.root.name, root, self.root)
                try:
                    replace_at(fd, name, data, writer)
                finally:
                    os.close(fd)
        return self.root / name

    def discard_stage(self, stage: Path) -> None:
        """Remove the staging directory `stage` of this store (what is left of it after a
        failure), reached from the experiment directory's handle: a link at its name (or at
        the experiment directory's) is removed itself or refused, never followed."""
        name = Path(stage).name
        if not STAGING.fullmatch(name):
            raise ValueError(f"discard_stage: {stage} is not a staging directory")
        self._stages.pop(name, None)
        try:
            with self._open() as root:
                remove_at(root, name)
        except (FileNotFoundError, UnsafeStore):  # gone, or the directory is not ours to touch
            pass

    # --- the layout ---------------------------------------------------------------------------

    def layout_problem(self) -> str | None:
        """What in the directory the store did not make and will not follow: a runs/,
        outputs/ or checkpoints/ that is a symbolic link or not a directory, a `latest` that
        is not a link to outputs/NAME, a summary.json, config.json, metrics.parquet or figure
        that is not the store's link into latest/; None if there is nothing."""
        try:
            with self._open() as fd:
                return _layout_problem(fd, self.directory)
        except FileNotFoundError:
            return None

    def check_layout(self) -> None:
        """UnsafeStore naming what layout_problem found, if anything."""
        problem = self.layout_problem()
        if problem is not None:
            raise refused(problem)

    # --- one writer at a time --------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the directory's write lock: StoreBusy if a live process holds it (the kernel
        releases a dead holder's flock, so there are no stale locks); StoreReadOnly if the
        directory cannot be written; UnsafeStore if the directory is not the store's (_claim),
        .lock is not a regular file of its own (a symbolic link is never opened) or the layout
        is not the store's (check_layout)."""
        path = self.directory / ".lock"
        with ExitStack() as stack:
            try:
                root = stack.enter_context(self._open(create=True))
                fd = os.open(
                    ".lock",
                    os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                    0o644,
                    dir_fd=root,
                )
            except OSError as err:
                if err.errno == errno.ELOOP:
                    raise UnsafeStore(
                        f"{path} is a symbolic link; the store never makes one and will not "
                        "open it: remove it"
                    ) from err
                if not isinstance(err, PermissionError) and err.errno != errno.EROFS:
                    raise
                raise StoreReadOnly(f"{self.directory} cannot be written ({err.strerror})") from err
            stack.callback(os.close, fd)  # releases the flock
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
                    f"{self.directory} is being written by PID {holder}; wait or use another --out"
                ) from None
            problem = _layout_problem(root, self.directory)
            if problem is not None:
                raise refused(problem)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            _clean_leftovers(root)
            yield

    # --- published outputs ------------------------------------------------------------------

    @property
    def latest(self) -> Path:
        """The path of the `latest` link, which leads to the current publication
        (outputs/NAME); see `published` for the directory itself, checked."""
        return self.directory / "latest"

    def published(self) -> Path | None:
        """The current publication's directory (outputs/NAME), if any; None also if its
        manifest is not one the store writes (said in one line: the outputs are made again).
        UnsafeStore if the layout is not the store's (check_layout)."""
        try:
            with self._open() as fd:
                problem = _layout_problem(fd, self.directory)
                if problem is not None:
                    raise refused(problem)
                name = _latest(fd, self.directory)
                if name is None:
                    return None
                with ExitStack() as stack:
                    outputs = open_directory("outputs", fd, self.directory / "outputs")
                    stack.callback(os.close, outputs)
                    final = self.directory / "outputs" / name
                    publication = open_directory(name, outputs, final)
                    stack.callback(os.close, publication)
                    try:
                        manifest = read_at(publication, MANIFEST, MAX_MANIFEST_BYTES, final)
                        _manifest_fields(manifest)
                    except FileNotFoundError:
                        return None
                    except (OSError, ValueError) as err:
                        logger.warning(
                            "%s: the manifest of the current publication is not the store's "
                            "(%s); the outputs are made again",
                            final,
                            err,
                        )
                        return None
                    return final
        except FileNotFoundError:
            return None

    def current_manifest(self) -> tuple[str, dict] | None:
        """(name, manifest) of the current publication, both read from handles (no link but
        `latest` followed), if its files match the manifest by size; None if there is none,
        its manifest is not the store's (said, as published does) or its files do not match.
        UnsafeStore if the layout is not the store's."""
        published = self.published()
        if published is None:
            return None
        try:
            with self._open("outputs", published.name) as fd:
                if manifest_problem_at(fd, published, deep=False) is not None:
                    return None
                data = read_at(fd, MANIFEST, MAX_MANIFEST_BYTES, published / MANIFEST)
                return published.name, _manifest_fields(data)
        except UnsafeStore:
            raise
        except (OSError, ValueError):  # changed since published() read it
            return None

    def published_file(self, path: str | Path) -> bytes:
        """The bytes of one file of a publication, named as a summary names it: a path
        outputs/NAME/FILE inside this directory (relative to it, or this directory's path
        joined with it). UnsafeStore unless it is a regular file directly in outputs/NAME
        (no symbolic link, absolute or ".." name) whose bytes match the sha256 that
        publication's manifest gives for it."""
        path = Path(path)
        try:
            relative = path.relative_to(self.directory)  # lexically: ".." stays ".."
        except ValueError:
            relative = path
        parts = relative.parts
        outside = UnsafeStore(
            f"{path} is not a file of a publication in {self.directory / 'outputs'}"
        )
        if relative.is_absolute() or len(parts) != 3 or parts[0] != "outputs":
            raise outside
        if not all(plain_name(part) for part in parts[1:]) or parts[2] == MANIFEST:
            raise outside
        self.check_layout()
        try:
            with self._open("outputs", parts[1]) as fd:
                return _verified_file(fd, parts[2], path)
        except (OSError, ValueError) as err:
            if isinstance(err, UnsafeStore):
                raise
            raise UnsafeStore(f"{path} cannot be read from its publication ({err})") from err

    def current_file(self, name: str = "summary.json") -> bytes | None:
        """The bytes of file `name` of the current publication (reached through `latest`,
        verified as published_file does); None if there is no publication."""
        try:
            with self._open() as fd:
                publication = _latest(fd, self.directory)
        except FileNotFoundError:
            return None
        if publication is None:
            return None
        return self.published_file(Path("outputs", publication, name))

    def staging(self) -> Path:
        """A fresh hidden directory to write a publication in; `runs` and `checkpoints` in it
        link to the experiment's own, so whatever writes there resumes and shares them."""
        with self._open(create=True) as fd:
            for shared in ("runs", "checkpoints"):
                _make_directory(fd, shared)
                os.close(open_directory(shared, fd, self.directory / shared))
            name = fresh_directory_at(fd, f".staging-{os.getpid()}-")
            stage = open_directory(name, fd, self.directory / name)
            try:
                info = os.fstat(stage)
                self._stages[name] = (info.st_dev, info.st_ino)
                for shared in ("runs", "checkpoints"):
                    os.symlink(Path("..") / shared, shared, dir_fd=stage)
            finally:
                os.close(stage)
        return self.directory / name

    def publish(self, stage: Path, name: str, **manifest_fields) -> Path:
        """Make `stage` the current publication outputs/<name>: manifest written, renamed into
        place, `latest` swapped to it in one rename, and the experiment directory's links
        (summary.json, config.json, metrics.parquet, figures) pointed through `latest`.
        UnsafeStore if the staging directory is not the one this store made, or a name it
        links is taken by something that is not its link."""
        stage_name = Path(stage).name
        final = self.directory / "outputs" / name
        if not (STAGING.fullmatch(stage_name) and plain_name(name)):
            raise ValueError(f"publish: {stage} is not a staging directory, or {name!r} no name")
        with ExitStack() as stack:
            root = stack.enter_context(self._open(create=True))
            fd = open_directory(stage_name, root, self.directory / stage_name)
            stack.callback(os.close, fd)
            made = self._stages.get(stage_name)
            if made is not None and made != _identity(fd):
                raise refused(f"{stage} was replaced while the experiment ran")
            for shared in ("runs", "checkpoints"):
                if _is_link(fd, shared):
                    os.unlink(shared, dir_fd=fd)
            write_manifest_at(fd, provenance=environment(), **manifest_fields)
            _make_directory(root, "outputs")
            outputs = open_directory("outputs", root, self.directory / "outputs")
            stack.callback(os.close, outputs)
            if _exists(outputs, name):  # an earlier publication of this config
                _discard_at(outputs, name)
            os.rename(stage_name, name, src_dir_fd=root, dst_dir_fd=outputs)
            if _identity_at(outputs, name) != _identity(fd):
                raise refused(f"{final} was replaced while it was published")
            _link_at(root, "latest", f"outputs/{name}", self.directory)
            for entry in sorted(os.listdir(fd)):
                if entry in LINKED or Path(entry).suffix in FIGURE_SUFFIXES:
                    _link_at(root, entry, f"latest/{entry}", self.directory)
            try:
                os.rmdir("checkpoints", dir_fd=root)  # only when empty
            except OSError:
                pass
        self._stages.pop(stage_name, None)
        return final

    # --- checkpoints ------------------------------------------------------------------------

    def checkpoints(self, key: str) -> CheckpointDirectory:
        """The checkpoint directory of run `key`: checkpoints/KEY of the experiment directory,
        reached from its handles at each use (a staging directory's checkpoints link is not
        followed)."""
        if not plain_name(key):
            raise ValueError(f"checkpoints: key {key!r} is not a file name")
        return CheckpointDirectory(
            self.directory / "checkpoints" / key, partial(self._open, "checkpoints")
        )


class CheckpointDirectory:
    """A run's checkpoint directory (a store's checkpoints/KEY: ResultsStore.checkpoints; or
    a directory of your own: `at`), whose files are read and written only through a handle of
    it opened afresh at each use, never through a symbolic link, and only while it is the
    directory first used: a link or anything but a directory at its name, or another
    directory put there while the run trained, is refused (UnsafeCheckpoint) and never
    followed or written into. Made when it is first written to.

    open_parent(create=...): a context manager giving a handle of the directory above it
    (made if missing when `create`; FileNotFoundError if missing otherwise)."""

    def __init__(self, path: Path, open_parent: Callable[..., AbstractContextManager[int]]):
        self.path = Path(path)
        self.open_parent = open_parent
        self.identity: tuple[int, int] | None = None  # (device, inode) of its first use

    @classmethod
    def at(cls, path: str | os.PathLike) -> CheckpointDirectory:
        """The checkpoint directory `path` of your own: the components above its last are
        followed (they are yours, as --out is), the last one never is."""
        path = Path(path)
        if path.name in ("", ".", ".."):
            raise ValueError(f"checkpoint directory {path}: name the directory itself")
        return cls(path, partial(_directory_by_path, path.parent))

    @contextmanager
    def handle(self, create: bool = False) -> Iterator[int]:
        """A handle of the directory (made if missing with `create`); FileNotFoundError if it
        is missing, UnsafeCheckpoint if it is not the directory first used."""
        try:
            with self.open_parent(create=create) as parent:
                if create:
                    _make_directory(parent, self.path.name)
                fd = open_directory(self.path.name, parent, self.path)
        except UnsafeStore as err:
            raise UnsafeCheckpoint(
                f"checkpoint directory: {err} (a run that loses its checkpoints trains again "
                "from the start)"
            ) from err
        try:
            found = _identity(fd)
            if self.identity is None:
                self.identity = found
            elif found != self.identity:
                raise UnsafeCheckpoint(
                    f"checkpoint directory {self.path} was replaced by another while the run "
                    "trained; it is not written into: remove it to train this run from the start"
                )
            yield fd
        finally:
            os.close(fd)

    def read(self, name: str, limit: int) -> bytes | None:
        """The bytes of its regular file `name` (never through a link: OSError, ELOOP), None
        if there is none; FileTooLarge if it holds more than `limit` bytes."""
        try:
            with self.handle() as fd:
                return read_at(fd, name, limit, self.path / name)
        except FileNotFoundError:
            return None

    def write(self, name: str, data: bytes | None = None, writer=None) -> None:
        """Write its file `name` atomically (replace_at: bytes `data`, or what writer(binary
        file) writes), making the directory if missing."""
        if not plain_name(name):
            raise ValueError(f"checkpoint file {name!r} is not a file name")
        with self.handle(create=True) as fd:
            replace_at(fd, name, data, writer)

    def remove(self) -> None:
        """Remove the directory and what it holds (a link at its name is removed itself), if
        the directory above it can be reached without following a link."""
        try:
            with self.open_parent(create=False) as parent:
                remove_at(parent, self.path.name)
        except (FileNotFoundError, UnsafeStore):
            pass


@contextmanager
def _directory_by_path(path: Path, create: bool = False) -> Iterator[int]:
    """A handle of the directory `path`, followed through links (a path of the user's own)."""
    if create:
        path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def _make_directory(dir_fd: int, name: str) -> bool:
    """Make directory `name` in dir_fd if nothing is there; whether it was made."""
    try:
        os.mkdir(name, 0o777, dir_fd=dir_fd)
        return True
    except FileExistsError:
        return False


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except (FileNotFoundError, NotADirectoryError):
        return False


def _is_directory(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _identity_at(dir_fd: int, name: str) -> tuple[int, int] | None:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def _problem_in(runs: int, key: str, shown: Path, deep: bool) -> str | None:
    """manifest_problem of the run directory runs/key (not followed if it is a link)."""
    try:
        fd = open_directory(key, runs, shown)
    except FileNotFoundError:
        return "missing"
    except UnsafeStore:
        return "it is a symbolic link or not a directory"
    try:
        return manifest_problem_at(fd, shown, deep)
    finally:
        os.close(fd)


def _discard_at(dir_fd: int, name: str) -> None:
    """Remove a run or publication directory: renamed out of sight first, so no reader sees it
    half gone (a symbolic link or file at its name is removed itself, never followed)."""
    aside = f".{name}-{os.getpid()}-discarded"
    try:
        os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except FileNotFoundError:
        return
    remove_at(dir_fd, aside)


def _copy_run(source: int, key: str, runs: int, tmp: str, shown: Path) -> None:
    """Copy the run directory source/key into the new directory runs/tmp: the files its
    manifest names, each checked against it as it is copied, then the manifest; ValueError if
    the source does not match it (or cannot be opened)."""
    with ExitStack() as stack:
        try:
            run = open_directory(key, source, shown)
            stack.callback(os.close, run)
            manifest = read_at(run, MANIFEST, MAX_MANIFEST_BYTES, shown / MANIFEST)
        except OSError as err:
            raise ValueError(f"its manifest cannot be opened ({err.strerror or err})") from err
        target = open_directory(tmp, runs, shown)
        stack.callback(os.close, target)
        for name, expected in parse_manifest(manifest).items():
            copy_verified_at(run, target, name, expected, shown / name)
        write_new_at(target, MANIFEST, manifest)  # last: the run is complete


def _clean_leftovers(root: int) -> list[str]:
    """ResultsStore.clean_leftovers in the experiment directory `root` (a handle)."""
    removed = []
    for parent, pattern, kind in TEMPORARY:
        try:
            fd = os.open(parent or ".", _DIRECTORY, dir_fd=root)
        except OSError:  # missing, or a link (the layout check refuses it)
            continue
        try:
            for name in os.listdir(fd):
                match = pattern.fullmatch(name)
                if match is None or pid_alive(int(match["pid"])):
                    continue
                try:
                    mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                except FileNotFoundError:
                    continue
                # what the store makes at such a name, or a link put there (unlinked)
                if stat.S_ISLNK(mode) or stat.S_ISDIR(mode) == (kind == "directory"):
                    remove_at(fd, name)
                    removed.append(name)
        finally:
            os.close(fd)
    return removed


def _read_latest(root: int, directory: Path) -> tuple[str | None, str | None]:
    """(the publication `latest` names in the experiment directory `root`, a handle; what is
    wrong with `latest`): (None, None) if there is none."""
    try:
        target = os.readlink("latest", dir_fd=root)
    except FileNotFoundError:
        return None, None
    except OSError:  # EINVAL: there, but not a link
        return None, f"{directory / 'latest'} is not a symbolic link"
    if not own_link("latest", target):
        return None, f"{directory / 'latest'} points to {target}, outside {directory / 'outputs'}"
    return Path(target).parts[1], None


def _latest(root: int, directory: Path) -> str | None:
    """The publication `latest` names (None: no `latest`); UnsafeStore if it is not the
    store's link."""
    name, problem = _read_latest(root, directory)
    if problem is not None:
        raise refused(problem)
    return name


def _layout_problem(root: int, directory: Path) -> str | None:
    """ResultsStore.layout_problem of the experiment directory `root` (a handle)."""
    for name in DIRECTORIES:
        try:
            mode = os.stat(name, dir_fd=root, follow_symlinks=False).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            return f"{directory / name} is a symbolic link"
        if not stat.S_ISDIR(mode):
            return f"{directory / name} is not a directory"
    for name in sorted(os.listdir(root)):
        if name in LINKED or Path(name).suffix in FIGURE_SUFFIXES:
            try:
                target = os.readlink(name, dir_fd=root)
            except FileNotFoundError:
                continue
            except OSError:  # EINVAL: there, but not a link
                return f"{directory / name} is not the store's link (a file or directory)"
            if not own_link(name, target):
                return f"{directory / name} points to {target}, not latest/{name}"
    name, problem = _read_latest(root, directory)
    if problem is not None:
        return problem
    if name is not None:
        try:
            outputs = os.open("outputs", _DIRECTORY, dir_fd=root)
        except OSError:
            return None  # dangling: no publication
        try:
            if _is_link(outputs, name):
                return f"{directory / 'outputs' / name} is a symbolic link"
        finally:
            os.close(outputs)
    return None


def _link_at(root: int, name: str, target: str, directory: Path) -> None:
    """name → target as a symlink in the experiment directory `root`, replacing in one rename
    only what the store made there (its own link); UnsafeStore for anything else."""
    try:
        current = os.readlink(name, dir_fd=root)
    except FileNotFoundError:
        current = None
    except OSError as err:  # EINVAL: a file or directory, not a link
        raise refused(f"{directory / name} is not the store's link (a file or directory)") from err
    if current == target:
        return
    if current is not None and not own_link(name, current):
        raise refused(f"{directory / name} points to {current}, not a link the store made")
    tmp = f".{name}.{os.getpid()}.link"
    remove_at(root, tmp)
    os.symlink(target, tmp, dir_fd=root)
    os.rename(tmp, name, src_dir_fd=root, dst_dir_fd=root)


def _verified_file(publication: int, name: str, shown: Path) -> bytes:
    """The bytes of file `name` of a publication (a handle), if it is a regular file listed in
    the publication's manifest with these bytes' size and sha256; UnsafeStore otherwise."""
    try:
        info = os.stat(name, dir_fd=publication, follow_symlinks=False)
        manifest = read_at(publication, MANIFEST, MAX_MANIFEST_BYTES, shown.parent / MANIFEST)
        expected = parse_manifest(manifest).get(name)
    except (OSError, ValueError) as err:
        raise UnsafeStore(f"{shown} cannot be read from its publication ({err})") from err
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        raise UnsafeStore(f"{shown} is {kind}, not a file of its publication")
    if expected is None:
        raise UnsafeStore(f"{shown} is not listed in its publication's manifest")
    if not info.st_size == expected["bytes"] <= MAX_PUBLISHED_FILE_BYTES:
        raise UnsafeStore(
            f"{shown} has {info.st_size} bytes, its manifest says {expected['bytes']} (at "
            f"most {MAX_PUBLISHED_FILE_BYTES} are read)"
        )
    try:
        data = read_at(publication, name, MAX_PUBLISHED_FILE_BYTES, shown)
    except (OSError, ValueError) as err:
        raise UnsafeStore(f"{shown} cannot be read from its publication ({err})") from err
    if hashlib.sha256(data).hexdigest() != expected["sha256"]:
        raise UnsafeStore(f"{shown} does not match the sha256 in its publication's manifest")
    return data


# number fields a config writes as "inf" where they are ∞ (JSON has none; Algorithm.to_dict):
# a float ∞ in the table, so that a column mixing them with finite values keeps one type
INFINITE_NUMBERS = ("algorithm.lr",)


def _scalars(config: Mapping, prefix: str = ""):
    """(name, value) of the scalar fields of a config, nested tables flattened to "a.b"; "inf",
    JSON's spelling of ∞ (a Polyak cap γ_b, an ℓ∞ norm), as the number, so that its column
    holds numbers beside the finite values."""
    for name, value in config.items():
        if isinstance(value, Mapping):
            yield from _scalars(value, f"{prefix}{name}.")
        elif isinstance(value, (int, float, str, bool)):
            yield f"{prefix}{name}", math.inf if value == "inf" else value
