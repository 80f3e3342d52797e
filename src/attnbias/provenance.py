"""Where a result was made: the versions of Python and the numerical packages, the platform,
the thread counts and the devices. Stored in each run's info.json and each publication's
manifest.json (store.py), and printed by `attnbias --version --verbose`.

Nothing heavy is imported at import time: torch and threadpoolctl are imported by the calls
(the store has imported them already)."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import sys
from pathlib import Path

# The packages whose version can change a number in the results.
PACKAGES = ("torch", "numpy", "scipy", "cvxpy")
CPUINFO = Path("/proc/cpuinfo")
CPUINFO_BYTES = 1 << 16  # the model name is in the first processor's lines


def package_version(name: str) -> str:
    """The installed distribution's version ("2.13.0+cpu"), or "not installed"."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what `platform` knows."""
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as f:
            text = f.read(CPUINFO_BYTES)
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return platform.processor() or platform.machine()


@functools.cache
def fixed() -> dict:
    """What cannot change while the process runs: versions, platform, CPU."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": {name: package_version(name) for name in PACKAGES},
        "platform": platform.platform(),
        "cpu": {"model": cpu_model(), "count": os.cpu_count(), "usable": usable},
    }


@functools.lru_cache(maxsize=1)
def native_pools(modules_loaded: int):
    """threadpoolctl's controller of the BLAS and OpenMP libraries loaded (finding them costs
    ~5 ms, once per run stored); kept while no module is imported, since a library arrives with
    the module that loads it. Its `info()` reads each library's thread count afresh."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def threads() -> dict:
    """The thread counts in effect now: torch's intra- and inter-op pools, and each BLAS or
    OpenMP library threadpoolctl finds loaded (a sweep limits them while it runs)."""
    import torch

    def entry(lib: dict) -> dict:
        # the file's folder names its owner (numpy.libs, torch/lib); the rest of its path,
        # the user's directories, is left out
        path = Path(lib.get("filepath") or "?")
        found = {k: lib.get(k) for k in ("user_api", "internal_api", "version", "num_threads")}
        return {**found, "library": f"{path.parent.name}/{path.name}"}

    return {
        "torch": torch.get_num_threads(),
        "torch_interop": torch.get_num_interop_threads(),
        "native": [entry(lib) for lib in native_pools(len(sys.modules)).info()],
    }


def devices(probe: bool = False) -> dict:
    """torch's CUDA build (None: a CPU build) and the GPUs this process has used (CUDA is
    initialised only by using it, so an empty list means the CPU did the work). probe: also
    list the GPUs visible, which initialises CUDA (not for a process that may fork workers)."""
    import torch

    def names() -> list[str]:
        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]

    found = {"torch_cuda": torch.version.cuda, "cuda_in_use": []}
    if torch.cuda.is_initialized():
        found["cuda_in_use"] = names()
    if probe:
        found["cuda_visible"] = names() if torch.cuda.is_available() else []
    return found


def environment(probe: bool = False) -> dict:
    """Everything above in one JSON-ready dict (see devices for probe)."""
    return {**fixed(), "threads": threads(), "devices": devices(probe)}


def describe(code_version: str) -> str:
    """`attnbias --version --verbose`: one line per item of environment(probe=True)."""
    env = environment(probe=True)
    cpu, found, pools = env["cpu"], env["devices"], env["threads"]

    def pool(lib: dict) -> str:
        version = f" {lib['version']}" if lib["version"] else ""
        return f"{lib['internal_api']}{version} ({lib['library']}): {lib['num_threads']}"

    native = ", ".join(pool(lib) for lib in pools["native"])
    cuda = found["torch_cuda"]
    gpus = ", ".join(found["cuda_visible"]) or "none visible"
    lines = [
        f"attnbias {code_version}",
        f"python    {env['python']}",
        *(f"{name:9s} {version}" for name, version in env["packages"].items()),
        f"platform  {env['platform']}",
        f"cpu       {cpu['model']}; {cpu['count']} CPUs, {cpu['usable']} usable",
        f"threads   torch {pools['torch']} (inter-op {pools['torch_interop']}); {native}",
        f"devices   {f'CUDA {cuda}: {gpus}' if cuda else 'CPU only (a CPU build of torch)'}",
    ]
    return "\n".join(lines)
