"""A sweep: every run not yet stored is trained, in as few batched programs as its shapes allow,
and stored the moment it finishes, so a sweep stopped at any point resumes where it was."""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import torch
from tqdm.auto import tqdm

from ..store import DIVERGED, ResultsStore, RunRecord
from .batch import RunBatch
from .cluster import (
    Cluster,
    ClusterFailed,
    WorkerCannotWrite,
    import_distributed,
    store_problem,
    task_name,
)
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
    cluster: Cluster | None = None,
) -> SweepReport:
    """Train and store every spec missing from `store` (or stored damaged: reported and
    trained again); return all their records.

    batch_size caps the runs per batched program (None: all runs of one shape together).
    cluster: train on its Dask workers instead, in chunks of cluster.chunk_size_for(runs)
    runs (capped by batch_size), each worker writing its runs into `store` (engine/cluster.py);
    the records are the same as in-process."""
    start = time.perf_counter()
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ValueError("two runs of the sweep have identical configs; make their configs differ")
    todo = set(store.heal(keys))
    if cluster is not None:
        chunk_size = min(cluster.chunk_size_for(len(todo)), batch_size or len(todo) or 1)
    else:
        chunk_size = None
    chunks = plan(specs, [k in todo for k in keys], batch_size, chunk_size)
    device = device or default_device()
    if cluster is None:
        svms = train_here(chunks, store, device, progress, desc)
    else:
        svms = train_on(cluster, chunks, store, device, progress, desc)
    return SweepReport(
        records=[store.load(k) for k in keys],
        ran=len(todo),
        skipped=len(specs) - len(todo),
        svms=svms,
        seconds=time.perf_counter() - start,
    )


@dataclass
class Chunk:
    """One batched program: `runs` specs to train and store, plus `companions`, runs of the
    same batch trained alongside but not stored, and the steps to record at."""

    runs: list[RunSpec]
    companions: list[RunSpec]
    grid: np.ndarray

    @property
    def steps(self) -> int:
        return max(s.steps for s in self.runs)


def hyper_class(spec: RunSpec) -> tuple:
    """What of a run the update core's fast paths look at across a batch (update.Hyper)."""
    a = spec.algorithm
    return a.mirror_p, a.rule, a.momentum > 0


def plan(
    specs: list[RunSpec], wanted: list[bool], batch_size: int | None, chunk_size: int | None
) -> list[Chunk]:
    """The wanted runs as chunks of at most chunk_size (None: whole batches).

    A batch is what an in-process sweep of all specs trains together: the runs of one structure,
    in pieces of batch_size. The update core takes faster paths when a batch's runs share p or
    step rule (a float p instead of a per-run tensor: the same maths, other roundings), and a
    batch re-checks as its runs end. So a chunk that is only part of its batch (a piece sent to
    a worker, the unfinished rest of a resumed sweep) also trains, for each hyper-parameter
    class of the batch, the longest run of that class (up to the chunk's length, not stored):
    at every step it takes the paths the whole batch takes, and each run ends bit for bit as
    in the whole batch. It records at the whole batch's steps too (divergence is bracketed by
    recorded steps)."""
    groups = defaultdict(list)
    for i, spec in enumerate(specs):
        groups[spec.structure].append(i)
    chunks = []
    for batch in (b for idx in groups.values() for b in split(idx, batch_size)):
        grid = union_grid([(specs[i].steps, specs[i].grid_points) for i in batch])
        longest = {}
        for i in batch:
            c = hyper_class(specs[i])
            if c not in longest or specs[i].steps > specs[longest[c]].steps:
                longest[c] = i
        for piece in split([i for i in batch if wanted[i]], chunk_size):
            runs = [specs[i] for i in piece]
            steps = max(s.steps for s in runs)
            covered = defaultdict(int)
            for s in runs:
                covered[hyper_class(s)] = max(covered[hyper_class(s)], s.steps)
            companions = [
                replace(specs[i], steps=min(specs[i].steps, steps))
                for c, i in longest.items()
                if covered[c] < min(specs[i].steps, steps)
            ]
            chunks.append(Chunk(runs, companions, grid[grid <= steps]))
    return chunks


def split(index: list[int], size: int | None) -> list[list[int]]:
    """index in consecutive pieces of `size` (the last may be shorter; None: one piece)."""
    size = size or len(index)
    return [index[at : at + size] for at in range(0, len(index), size)]


def train(chunk: Chunk, store: ResultsStore, refs: References, device: str, progress=None):
    """Train a chunk as one batched program, storing each of its runs as it ends."""
    runs = chunk.runs + chunk.companions
    index = np.arange(len(runs))
    index[len(chunk.runs) :] = -1  # companions: not stored

    def finish(done: Finished):
        finished = [runs[i] for i in done.index if i >= 0]
        if finished:
            kept = Finished(**{**vars(done), **select(done, done.index >= 0)})
            for spec, result in zip(finished, measure(finished, kept, refs)):
                store.save(spec.record, result.metrics, result.arrays, result.info, key=spec.key)

    batch = RunBatch.from_specs(runs, index=index, device=device)
    simulate(batch, chunk.grid, finish, progress=progress)


def select(done: Finished, keep: np.ndarray) -> dict:
    """The per-run fields of `done` for the runs where keep is True."""
    rows = torch.as_tensor(keep)
    return {
        "index": done.index[keep],
        "snapshots": {k: s[rows] for k, s in done.snapshots.items()},
        "final": {k: w[keep] for k, w in done.final.items()},
        "first_nonfinite": None if done.first_nonfinite is None else done.first_nonfinite[keep],
    }


def train_here(chunks: list[Chunk], store, device, progress: bool, desc: str) -> int:
    """Train the chunks in this process, sharing SVM solutions; returns the SVMs solved."""
    refs = References()
    pending = sum(len(c.runs) for c in chunks)
    with (
        _threads(1),
        tqdm(
            total=sum(c.steps for c in chunks),
            desc=f"{desc} ({pending} runs)",
            unit="step",
            disable=None if progress else True,
        ) as bar,
    ):
        for chunk in chunks:
            train(chunk, store, refs, device, progress=bar.update)
    return refs.solved


def train_chunk(chunk: Chunk, root: str, device: str) -> tuple[int, int]:
    """A cluster task: train the chunk's runs not yet in the store at `root`, with SVM
    solutions of its own (they are deterministic, so shared or not, the numbers are the same);
    returns (runs trained, SVMs solved). A retried chunk skips the runs its earlier try stored
    (its companions keep the rest on the whole batch's paths)."""
    store = ResultsStore(root)
    problem = store_problem(root)
    if problem is not None:
        raise WorkerCannotWrite(problem)
    todo = [s for s in chunk.runs if not store.has(s.key)]
    refs = References()
    if todo:
        with _threads(1):
            train(rest(chunk, todo), store, refs, device)
    return len(todo), refs.solved


def rest(chunk: Chunk, todo: list[RunSpec]) -> Chunk:
    """The chunk with only the runs `todo`, keeping the companions it needs (its stored runs
    become companions too, shortened to what is left)."""
    steps = max(s.steps for s in todo)
    keys = {s.key for s in todo}
    others = chunk.companions + [s for s in chunk.runs if s.key not in keys]
    companions = [replace(s, steps=min(s.steps, steps)) for s in others]
    return Chunk(todo, companions, chunk.grid[chunk.grid <= steps])


def train_on(cluster: Cluster, chunks: list[Chunk], store, device, progress: bool, desc: str):
    """Train the chunks as tasks of `cluster`, which write into the store; returns the SVMs
    solved. Progress counts runs done on the client."""
    if not chunks:
        return 0
    # Workers may run elsewhere: the store by its absolute path, through any staging link.
    root = store.runs.resolve().parent
    cluster.check_writable(root)
    runs = sum(len(c.runs) for c in chunks)
    cluster.announce(f"{desc}: {runs} runs in {len(chunks)} chunk(s)")
    distributed = import_distributed()
    futures = {}
    for chunk in chunks:
        name = task_name(desc, [s.key for s in chunk.runs])
        futures[cluster.submit(train_chunk, chunk, str(root), device, name=name)] = len(chunk.runs)
    svms = 0
    with tqdm(
        total=sum(futures.values()),
        desc=f"{desc} on the cluster",
        unit="run",
        disable=None if progress else True,
    ) as bar:
        try:
            for future in distributed.as_completed(futures):
                svms += future.result()[1]
                bar.update(futures[future])
        except distributed.KilledWorker as err:
            raise ClusterFailed(
                f"{desc}: a chunk's workers died repeatedly ({err}); the runs finished so far "
                "are stored and a rerun resumes"
            ) from err
        finally:
            cluster.client.cancel(list(futures))
    return svms
