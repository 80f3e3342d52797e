"""A sweep: every run not yet stored is trained, in as few batched programs as its shapes allow,
and stored the moment it finishes, so a sweep stopped at any point resumes where it was."""

from __future__ import annotations

import hashlib
import logging
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from ..log import Progress
from ..store import DIVERGED, ResultsStore, RunRecord
from . import memory
from .batch import RunBatch
from .cluster import (
    Cluster,
    ClusterFailed,
    WorkerCannotWrite,
    import_distributed,
    positive_int,
    store_problem,
    task_name,
)
from .grid import union_grid
from .measure import measure, measured_as_configured
from .simulate import Finished, simulate
from .spec import RunSpec
from .targets import References

logger = logging.getLogger(__name__)


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
    """Tiny batched ops run fastest on one thread (more only add contention on a small machine):
    torch's and numpy's BLAS alike (`fused.bmm` takes small products to numpy, whose BLAS may
    otherwise thread even those)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(n, user_api="blas"):
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
    chunk_size: int | None = None,
) -> SweepReport:
    """Train and store every spec missing from `store` (or stored damaged, or measured
    against another run's norms: reported and trained again); return all their records.

    batch_size caps the runs per batched program (None: all runs of one shape together).
    Batches larger than fits in `memory.ENGINE_BUDGET` (or than chunk_size) are trained in
    chunks, one after the other: pieces of the batch that end bit for bit as in it (`plan`).
    cluster: train on its Dask workers instead, in chunks of cluster.chunk_size_for(runs)
    runs (no larger than fits), each worker writing its runs into `store`
    (engine/cluster.py); the records are bit for bit the same as in-process.
    Raises memory.SweepTooLarge before training when all the records cannot be held."""
    start = time.perf_counter()
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ValueError("two runs of the sweep have identical configs; make their configs differ")
    if chunk_size is not None:
        positive_int(chunk_size, "chunk_size")
    todo = set(store.heal(keys))
    stored = {k: store.load(k) for k in dict.fromkeys(keys) if k not in todo}
    mismeasured = [k for k, record in stored.items() if not measured_as_configured(record)]
    if mismeasured:
        logger.warning(
            "%s: %d stored runs were measured against another run's Att-SVM norms (a batch "
            "mixing norms, before they were split); training them again",
            desc, len(mismeasured),
        )  # fmt: skip
        for k in mismeasured:
            store.discard(k)
            del stored[k]
        todo.update(mismeasured)
    fits = memory.chunk_size(
        [
            ([specs[i] for i in b], len(batch_grid([specs[i] for i in b])))
            for b in batches(specs, batch_size)
        ]
    )
    chunk_size = min(chunk_size or fits, fits)
    if cluster is not None:
        chunk_size = min(cluster.chunk_size_for(len(todo)), chunk_size)
    memory.check(specs, len(todo), chunk_size, desc)
    chunks = plan(specs, [k in todo for k in keys], batch_size, chunk_size)
    device = device or default_device()
    if not todo:
        logger.info("%s: all %d runs are stored; nothing to train", desc, len(keys))
    trained = {}  # the records of the runs stored by this process, as the store reads them
    if cluster is None:
        svms = train_here(chunks, store, device, progress, desc, trained)
    else:
        svms = train_on(cluster, chunks, store, device, progress, desc)
    found = {**stored, **trained}  # runs trained on a cluster are read back from the store
    logger.info("%s: reading %d runs back from the store", desc, len(set(keys) - set(found)))
    return SweepReport(
        records=[found[k] if k in found else store.load(k) for k in keys],
        ran=len(todo),
        skipped=len(specs) - len(todo),
        svms=svms,
        seconds=time.perf_counter() - start,
    )


# torch's CPU kernels run an elementwise op on a contiguous tensor in SIMD blocks and its last
# (size mod block) elements through the scalar function; for sigmoid and pow the two differ in
# the last bit. A run's numbers therefore depend on how many rows follow it in the batch tensor
# (up to a block) and on the row count mod the block. BLOCK is a multiple of every block torch
# uses for float64 (AVX-512: 2 × 8).
BLOCK = 16


@dataclass
class Chunk:
    """One batched program standing in for part of an in-process batch (see `plan`).

    runs: the program's runs in order; own[r]: runs[r] is one of the chunk's runs (stored),
    the others are stand-ins (not stored); rows_after[key], in_step[steps]: how many runs end
    after an own run at its last step in the whole batch (at most BLOCK), and how many end at
    that step (mod BLOCK); grid: the whole batch's recording steps."""

    runs: list[RunSpec]
    own: list[bool]
    rows_after: dict[str, int]
    in_step: dict[int, int]
    grid: np.ndarray

    @property
    def stored(self) -> list[RunSpec]:
        return [s for s, own in zip(self.runs, self.own) if own]

    @property
    def steps(self) -> int:
        return max(s.steps for s in self.stored)


def hyper_class(spec: RunSpec) -> tuple:
    """What of a run the update core's fast paths look at across a batch (update.Hyper)."""
    a = spec.algorithm
    return a.mirror_p, a.step_rule, a.momentum > 0


def plan(
    specs: list[RunSpec], wanted: list[bool], batch_size: int | None, chunk_size: int | None
) -> list[Chunk]:
    """The wanted runs as chunks of at most chunk_size (None: whole batches), each one batched
    program whose runs end bit for bit as in the in-process batch of all specs.

    That batch is the runs of one structure, in pieces of batch_size; a chunk is part of it (a
    piece sent to a worker, the unfinished rest of a resumed sweep). Rounding there depends on
    the batch's composition in two ways, which a chunk reproduces with stand-in runs it trains
    but does not store:
    - the update core takes faster paths when the active runs share p or step rule (a float p
      instead of a per-run tensor): the chunk also trains the longest run of each
      hyper-parameter class, so at every step the same classes are active;
    - SIMD blocks (BLOCK): the chunk also trains, after each of its runs, the BLOCK longest runs
      that follow it in the batch, so up to BLOCK the same number of runs follows it at every
      step, and before its runs, copies of its longest run, so the number of active runs is
      the batch's mod BLOCK. Measuring (`train`) pads each step's finished runs likewise.
    Stand-ins stop with the chunk's last run, so a chunk takes as many steps as its own runs."""
    chunks = []
    for index in batches(specs, batch_size):
        batch = [specs[i] for i in index]
        grid = batch_grid(batch)
        steps = np.array([s.steps for s in batch])
        longest = {}
        for k, spec in enumerate(batch):
            c = hyper_class(spec)
            if c not in longest or spec.steps > batch[longest[c]].steps:
                longest[c] = k
        followers, ending_after = longest_followers(steps), ending_with_after(steps)
        # Runs on the same data side by side: they share SVM solutions within a chunk.
        todo = sorted((k for k, i in enumerate(index) if wanted[i]), key=data_order(batch))
        for piece in split(todo, chunk_size):
            piece = sorted(piece)
            chunks.append(
                stand_in(batch, steps, piece, set(longest.values()), followers, ending_after, grid)
            )
    return chunks


def batches(specs: list[RunSpec], batch_size: int | None) -> list[list[int]]:
    """The in-process batches: positions of the runs of one structure, in pieces of
    batch_size (None: whole)."""
    groups = defaultdict(list)
    for i, spec in enumerate(specs):
        groups[spec.structure].append(i)
    return [b for index in groups.values() for b in split(index, batch_size)]


def batch_grid(batch: list[RunSpec]) -> np.ndarray:
    """The steps a batch records at: every step where one of its runs does."""
    return union_grid([(s.steps, s.grid_points) for s in batch])


def data_order(batch: list[RunSpec]):
    """Sort key of batch positions: by the run's data (first seen first), then position."""
    digests = {}  # by problem object: specs of one seed usually share theirs

    def digest(problem) -> bytes:
        if id(problem) not in digests:
            data = b"".join(np.ascontiguousarray(a).tobytes() for a in (problem.X, problem.z))
            digests[id(problem)] = hashlib.sha1(data).digest()
        return digests[id(problem)]

    first = {}
    for k, spec in enumerate(batch):
        first.setdefault(digest(spec.problem), k)
    return lambda k: (first[digest(batch[k].problem)], k)


def longest_followers(steps: np.ndarray) -> list[list[int]]:
    """For each position k, the BLOCK longest runs after it."""
    out, top = [[] for _ in steps], []
    for k in range(len(steps) - 1, -1, -1):
        out[k] = list(top)
        top = sorted([*top, k], key=lambda q: -steps[q])[:BLOCK]
    return out


def ending_with_after(steps: np.ndarray) -> np.ndarray:
    """For each position k, how many runs after it end at the same step."""
    out, seen = np.zeros(len(steps), dtype=np.int64), defaultdict(int)
    for k in range(len(steps) - 1, -1, -1):
        out[k] = seen[steps[k]]
        seen[steps[k]] += 1
    return out


def stand_in(batch, steps, piece, longest, followers, ending_after, grid) -> Chunk:
    """The chunk for positions `piece` of `batch` (see `plan`)."""
    last = int(steps[piece].max())
    own = set(piece)
    members = sorted(own | longest | {q for k in piece for q in followers[k]})
    runs = [batch[k] if k in own else shorten(batch[k], last) for k in members]
    # Copies of the longest own run before the rest, keeping the active count ≡ the batch's:
    # pads[g] copies are active in the g-th interval between the steps where runs end.
    ends = np.unique(np.minimum(steps, last))
    active = np.array([(steps > t).sum() - sum(s.steps > t for s in runs) for t in ends - 1])
    pads = [0] * len(ends)
    for g in range(len(ends) - 1, -1, -1):
        above = pads[g + 1] if g + 1 < len(ends) else 0
        pads[g] = above + (active[g] - above) % BLOCK
    longest_own = batch[piece[int(np.argmax(steps[piece]))]]
    copies = [
        shorten(longest_own, int(ends[max(g for g in range(len(ends)) if pads[g] > c)]))
        for c in range(pads[0])
    ]
    return Chunk(
        runs=copies + runs,
        own=[False] * len(copies) + [k in own for k in members],
        rows_after={batch[k].key: min(int(ending_after[k]), BLOCK) for k in own},
        in_step={int(t): int((steps == t).sum()) % BLOCK for t in np.unique(steps[piece])},
        grid=grid[grid <= last],
    )


def shorten(spec: RunSpec, steps: int) -> RunSpec:
    return spec if spec.steps <= steps else replace(spec, steps=steps)


def split(index: list[int], size: int | None) -> list[list[int]]:
    """index in consecutive pieces of `size` (the last may be shorter; None: one piece)."""
    size = size or len(index) or 1
    return [index[at : at + size] for at in range(0, len(index), size)]


def measured_rows(chunk: Chunk, finished: list[RunSpec]) -> list[tuple[int, bool]]:
    """(which of `finished` (own runs ending at one step, in order), stored?) for each row
    measured: the own runs with copies of the first between them and before them, so that as
    many rows follow each (up to BLOCK) and as many are measured (mod BLOCK) as in the whole
    batch at that step."""
    rows, after = [], 0
    for r in range(len(finished) - 1, -1, -1):
        need = chunk.rows_after[finished[r].key]
        fill = need - after if need < BLOCK else max(0, BLOCK - after)
        rows = [(r, True)] + [(0, False)] * fill + rows
        after += fill + 1
    lead = (chunk.in_step[finished[0].steps] - len(rows)) % BLOCK
    return [(0, False)] * lead + rows


def train_chunk_and_store(
    chunk: Chunk,
    store: ResultsStore,
    refs: References,
    device: str,
    progress: Progress | None = None,
    skip=(),
    trained: dict | None = None,
) -> None:
    """Train a chunk as one batched program, storing each of its runs (but those in `skip`)
    as it ends; `trained` (if given) gets each stored run's record by its key."""

    def finish(done: Finished):
        at = [r for r, i in enumerate(done.index) if chunk.own[i]]
        if not at:
            return
        finished = [chunk.runs[done.index[r]] for r in at]
        if progress is not None and done.steps == chunk.steps:  # the bar is full from here
            progress.phase(f"solving Att-SVMs and measuring the last {len(finished)} runs")
        rows = measured_rows(chunk, finished)
        pick = [at[r] for r, _ in rows]
        part = Finished(**{**vars(done), **select(done, pick)})
        results = measure([finished[r] for r, _ in rows], part, refs)
        for (r, stored), result in zip(rows, results):
            spec = finished[r]
            if stored and spec.key not in skip:
                record = store.save_record(
                    spec.record, result.metrics, result.arrays, result.info, key=spec.key
                )
                if trained is not None:
                    trained[spec.key] = record
                if progress is not None:
                    progress.runs_finished()

    batch = RunBatch.from_specs(chunk.runs, device=device)
    simulate(batch, chunk.grid, finish, progress=None if progress is None else progress.update)


def select(done: Finished, rows: list[int]) -> dict:
    """The per-run fields of `done` for these rows (repeats allowed)."""
    at = torch.as_tensor(rows, dtype=torch.long)
    return {
        "index": done.index[rows],
        "snapshots": {k: s[at] for k, s in done.snapshots.items()},
        "final": {k: w[rows] for k, w in done.final.items()},
        "first_nonfinite": None if done.first_nonfinite is None else done.first_nonfinite[rows],
    }


def train_here(
    chunks: list[Chunk], store, device, progress: bool, desc: str, trained: dict | None = None
) -> int:
    """Train the chunks in this process, sharing SVM solutions; returns the SVMs solved.
    trained: as `train`'s."""
    refs = References()
    if not chunks:
        return 0
    runs = sum(len(c.stored) for c in chunks)
    steps = sum(c.steps for c in chunks)
    with _threads(1), Progress(desc, steps, runs=runs, enabled=progress, logger=logger) as bar:
        for chunk in chunks:
            train_chunk_and_store(chunk, store, refs, device, progress=bar, trained=trained)
    return refs.solved


def train_chunk(chunk: Chunk, root: str, device: str) -> tuple[int, int]:
    """A cluster task: train the chunk and store its runs not yet in the store at `root`,
    with SVM solutions of its own (they are deterministic, so shared or not, the numbers are
    the same); returns (runs stored, SVMs solved). A retried chunk trains the same program
    again (so its runs end as they would have) and stores only what its earlier try did not."""
    store = ResultsStore(root)
    problem = store_problem(root)
    if problem is not None:
        raise WorkerCannotWrite(problem)
    done = {s.key for s in chunk.stored if store.has(s.key)}
    refs = References()
    if len(done) < len(chunk.stored):
        with _threads(1):
            train_chunk_and_store(chunk, store, refs, device, skip=done)
    return len(chunk.stored) - len(done), refs.solved


def train_on(cluster: Cluster, chunks: list[Chunk], store, device, progress: bool, desc: str):
    """Train the chunks as tasks of `cluster`, which write into the store; returns the SVMs
    solved. Progress counts runs done on the client."""
    if not chunks:
        return 0
    # Workers may run elsewhere: the experiment directory by its absolute path, no link
    # resolved (each worker's store opens it without following one).
    root = store.directory.absolute()
    cluster.check_writable(root)
    runs = sum(len(c.stored) for c in chunks)
    cluster.announce(f"{desc}: {runs} runs in {len(chunks)} chunk(s)")
    distributed = import_distributed()
    futures = {}
    for chunk in chunks:
        keys = [s.key for s in chunk.stored]
        futures[
            cluster.submit(train_chunk, chunk, str(root), device, name=task_name(desc, keys))
        ] = len(keys)
    svms = 0
    with Progress(
        f"{desc} on the cluster", runs, unit="run", enabled=progress, logger=logger
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
