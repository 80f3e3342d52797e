"""A sweep: every run not yet stored is trained, in as few batched programs as its shapes allow,
and stored the moment it finishes, so a sweep stopped at any point resumes where it was."""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from ..store import DIVERGED, ResultsStore, RunRecord
from .batch import RunBatch
from .grid import union_grid
from .measure import measure
from .simulate import Finished, simulate
from .spec import RunSpec
from .targets import References


@dataclass
class SweepReport:
    records: list[RunRecord]  # one per spec, in the order given
    ran: int  # runs trained now
    skipped: int  # runs found finished in the store
    svms: int  # distinct SVMs solved now
    seconds: float

    @property
    def diverged(self) -> list[RunRecord]:
        return [r for r in self.records if r.status == DIVERGED]


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


@contextmanager
def _threads(n: int):
    """Tiny batched ops run fastest on one thread (more only add contention on a small machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_sweep(
    specs: list[RunSpec],
    store: ResultsStore,
    batch_size: int | None = None,
    device: str | None = None,
    progress: bool = True,
    desc: str = "runs",
) -> SweepReport:
    """Train and store every spec missing from `store` (or stored damaged: reported and
    trained again); return all their records.

    batch_size caps the runs per batched program (None: all runs of one shape together)."""
    start = time.perf_counter()
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ValueError("two runs of the sweep have identical configs; make their configs differ")
    todo = set(store.heal(keys))
    groups = defaultdict(list)
    for i, (spec, key) in enumerate(zip(specs, keys)):
        if key in todo:
            groups[spec.structure].append(i)
    chunks = [
        idx[at : at + (batch_size or len(idx))]
        for idx in groups.values()
        for at in range(0, len(idx), batch_size or len(idx))
    ]
    pending = sum(len(c) for c in chunks)
    refs = References()

    def finish(done: Finished):
        finished = [specs[i] for i in done.index]
        for spec, result in zip(finished, measure(finished, done, refs)):
            store.save(spec.record, result.metrics, result.arrays, result.info, key=spec.key)

    total = sum(max(specs[i].steps for i in c) for c in chunks)
    device = device or default_device()
    with (
        _threads(1),
        tqdm(
            total=total,
            desc=f"{desc} ({pending} runs)",
            unit="step",
            disable=None if progress else True,
        ) as bar,
    ):
        for chunk in chunks:
            batch = RunBatch.from_specs([specs[i] for i in chunk], index=chunk, device=device)
            grid = union_grid([(specs[i].steps, specs[i].grid_points) for i in chunk])
            simulate(batch, grid, finish, progress=bar.update)
    return SweepReport(
        records=[store.load(k) for k in keys],
        ran=pending,
        skipped=len(specs) - pending,
        svms=refs.solved,
        seconds=time.perf_counter() - start,
    )
