"""How much memory a sweep takes, so that a large one is trained in chunks that fit and one
whose results cannot all be held is refused before anything is trained (never killed for memory
halfway).

Two parts (float64; the constants measured on md-local-shaped runs):
- the batched program: per run, its recorded iterates (snapshots) and, when it ends, their
  measurement's temporaries, plus the data and the step's buffers. A sweep trains chunks of
  runs (`sweep.plan`, the path a Dask worker runs) small enough for `ENGINE_BUDGET`.
- the results: every run's record (metrics table, arrays) is read back and held by the caller,
  which also builds one table of all of them; per recorded value and per run.
"""

from __future__ import annotations

import functools
import math
import os
from collections import Counter
from pathlib import Path

from ..defaults import FLOAT
from .grid import log_grid
from .spec import RunSpec

ENGINE_BUDGET = 1 << 30  # bytes for one chunk's batched program, at most
# a recorded iterate's float64 entries are held about this many times over while a run is
# measured (its snapshot, the per-step metric tensors, the norms' temporaries)
SNAPSHOT_COPIES = 5
STEP_BUFFERS = 40  # buffers shaped like a run's parameters or data, per run, while stepping
# a recorded metric value held as results: its row in the run's record and in the caller's
# table of all runs (with the run's key and config columns); a record's fixed part (config,
# info, arrays, Python objects). Measured: 600 runs of 459 values each held 119 kB per run as
# records and 108 kB in the table of all (494 B a value); with some margin:
RESULT_VALUE_BYTES = 500
RESULT_RUN_BYTES = 20_000


class SweepTooLarge(ValueError):
    """The sweep's results cannot be held in the memory available (a ValueError: on the command
    line a usage error, exit code 2)."""


def available_memory() -> int:
    """Bytes this process can still take: MemAvailable, within any cgroup (v2 or v1) limit."""
    sizes = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                sizes.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    for limit, used in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ):
        try:
            sizes.append(int(Path(limit).read_text()) - int(Path(used).read_text()))
        except (OSError, ValueError):
            pass  # no such controller, or "max"
    if not sizes:
        sizes.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    return max(min(sizes), 0)


def recorded_values(spec: RunSpec) -> int:
    """Metric values a run records (about: the metrics `measure` takes for its norms)."""
    per_step = 5 + 4 * len(spec.norms) + (2 + 2 * len(spec.norms) if spec.train_head else 0)
    return grid_length(spec.steps, spec.grid_points) * per_step


@functools.lru_cache(maxsize=1024)
def grid_length(steps: int, points: int) -> int:
    return len(log_grid(steps, points))


def engine_bytes(spec: RunSpec, grid_points: int) -> int:
    """One run's share of its batched program recording at `grid_points` steps."""
    observed = sum(spec.init[k].size for k in spec.init if k != "K" and k != "Q")
    if "K" in spec.init:
        d = spec.init["K"].shape[0]
        observed += d * d
    data = spec.problem.X.size * 3 + spec.problem.z.size * 2
    params = sum(w.size for w in spec.init.values())
    return program_bytes(observed, params, data, grid_points)


def program_bytes(observed: int, params: int, data: int, grid_points: int) -> int:
    """One run's share of a batched program: `observed` entries recorded at each of
    `grid_points` steps, `params` parameter entries, `data` entries of its problem's tensors."""
    snapshots = grid_points * observed * SNAPSHOT_COPIES
    return FLOAT * (snapshots + STEP_BUFFERS * params + 4 * data)


def result_bytes(spec: RunSpec) -> int:
    return RESULT_VALUE_BYTES * recorded_values(spec) + RESULT_RUN_BYTES


def chunk_size(batches: list[tuple[list[RunSpec], int]], budget: int | None = None) -> int:
    """Runs per chunk so that any chunk of these batches ((runs, grid points) each) fits in
    `budget` (default ENGINE_BUDGET; at least 1)."""
    budget = ENGINE_BUDGET if budget is None else budget
    largest = max((engine_bytes(runs[0], points) for runs, points in batches if runs), default=1)
    return max(1, budget // largest)


def estimate(specs: list[RunSpec], todo: int, chunk: int) -> tuple[int, int]:
    """(bytes of all the results, bytes of training `todo` of the runs in chunks of `chunk`)."""

    # runs alike in what the estimates read of them, counted
    kinds = [(s.steps, s.grid_points, len(s.norms), s.structure) for s in specs]
    first = dict(zip(reversed(kinds), reversed(specs)))
    results = sum(n * result_bytes(first[k]) for k, n in Counter(kinds).items())
    per_run = max((engine_bytes(s, 2 * s.grid_points) for s in first.values()), default=0)
    return results, min(todo, chunk) * per_run


def check(specs: list[RunSpec], todo: int, chunk: int, desc: str) -> None:
    """SweepTooLarge, with the estimate and what fits, when the results of `specs` (of which
    `todo` are trained in chunks of `chunk` runs) need more memory than is available."""
    if not specs:
        return
    results, engine = estimate(specs, todo, chunk)
    available = available_memory()
    if results + engine <= available:
        return
    per_run = results / len(specs)
    fit = max(0, int((available - engine) // per_run))
    seeds = {data_seed(s) for s in specs} - {None}
    hint = ""
    if seeds and fit:
        per_seed = len(specs) / len(seeds)
        hint = f" (--seeds {max(1, int(fit // per_seed))} or fewer)"
    raise SweepTooLarge(
        f"{desc}: {len(specs):,} runs would hold about {gib(results)} GiB of results in memory "
        f"(+ {gib(engine)} GiB for training in chunks of {chunk:,} runs), more than the "
        f"{gib(available)} GiB available; about {fit:,} runs fit: run fewer{hint}"
    )


def data_seed(spec: RunSpec):
    """The seed of the run's data as its config names it (None if it names none)."""
    data = spec.config.get("data")
    seed = data.get("seed") if isinstance(data, dict) else None
    return seed if isinstance(seed, int) else None


def gib(size: float) -> str:
    return f"{size / 2**30:.1f}" if size < 100 * 2**30 else f"{math.ceil(size / 2**30):,}"


def least_run_bytes(steps: int, grid_points: int, params: int) -> int:
    """The least one run of a sweep holds once built and trained: its initial parameters
    (`params` float64 entries) and its results (at least 5 metrics at each recorded step)."""
    values = 5 * (min(steps, grid_points) + 1)
    return FLOAT * params + RESULT_VALUE_BYTES * values + RESULT_RUN_BYTES


def check_planned(desc: str, runs: int, run_bytes: int, shared_bytes: int, fields: str) -> None:
    """SweepTooLarge, naming `fields` (what sets the size, "seeds = 1,000,000, d = 10"), when
    `runs` runs of at least run_bytes each plus shared_bytes (their problems, the batched
    program of one run) cannot be held: checked from a config before any run or problem is
    built, so a sweep that cannot fit fails at once (its full estimate, `check`, needs the
    built runs)."""
    need = runs * run_bytes + shared_bytes
    available = available_memory()
    if need > available:
        raise SweepTooLarge(
            f"{desc}: {fields} make {runs:,} runs needing at least {gib(need)} GiB (their "
            f"problems, initial weights, results and the training of one), more than the "
            f"{gib(available)} GiB available; lower them"
        )
