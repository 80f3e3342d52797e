"""Which implementation takes the steps that have a compiled (numba) twin, and loading it.

Two steps have one: the engine's batched step on the CPU (`engine.compiled`) and ℓp mirror
descent's step of one large CPU tensor (`optim.fused_mirror`). torch stays the reference for
both; each compiled twin is tested against it.

`ATTNBIAS_ENGINE_BACKEND` = "compiled" (the default: numba where installed) or "torch". Without
numba (`pip install 'attnbias[compiled]'`) each says so once, in one line, and steps with
torch. numba caches its compiled programs in ~/.cache/attnbias/numba (`NUMBA_CACHE_DIR` if
set), so only a process that finds no cache compiles.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path
from types import ModuleType

BACKENDS = ("compiled", "torch")
BACKEND_VARIABLE = "ATTNBIAS_ENGINE_BACKEND"


def backend_named(name: str | None = None) -> str:
    """The backend asked for: `name`, else $ATTNBIAS_ENGINE_BACKEND, else "compiled"."""
    chosen = name or os.environ.get(BACKEND_VARIABLE) or "compiled"
    if chosen not in BACKENDS:
        raise ValueError(f"{BACKEND_VARIABLE} must be one of {BACKENDS}, got {chosen!r}")
    return chosen


def numba_module(name: str, logger: logging.Logger, without: str) -> ModuleType | None:
    """The module `name` of numba kernels, or None, said in one line at INFO on `logger`
    ("numba is not installed: " + `without`, or why numba is unusable) when numba is missing
    or cannot run here. Callers cache the answer, so each says it once."""
    if "NUMBA_CACHE_DIR" not in os.environ:
        try:
            cache = Path.home() / ".cache" / "attnbias" / "numba"
            cache.mkdir(parents=True, exist_ok=True)
            os.environ["NUMBA_CACHE_DIR"] = str(cache)
        except (OSError, RuntimeError):
            pass  # numba's own cache places (none where nothing is writable)
    try:
        return importlib.import_module(name)
    except ImportError:
        logger.info("numba is not installed: %s (pip install 'attnbias[compiled]')", without)
    except RuntimeError as err:  # numba without a writable cache, or an unknown CPU
        logger.info("numba is unusable here (%s): %s", err, without)
    return None
