"""Sweeps on a Dask cluster (the optional `dask` extra): where the tasks of a sweep run.

A synthetic sweep is cut into chunks, each one batched tensor program trained on a worker
(`train_chunk`), which writes its finished runs straight into the results store; the store
must be a directory every worker reaches (the same path on every machine). A real-data
experiment sends each training run as one task. The client only submits, shows progress and
reads the store afterwards, so the result table is the in-process one.

Faults: distributed re-runs the tasks of a worker that died (up to the scheduler's
`allowed-failures`) and a task that raised up to `retries` times; a retried chunk trains the
same program again and stores only the runs its earlier try did not, and two writers of one
run leave one copy (the store's atomic save). A worker that cannot write the store fails the
sweep with WorkerCannotWrite, before anything is trained.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import tempfile
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from .._validate import check_scalar
from ..defaults import CONNECT_TIMEOUT
from ..store import config_key

logger = logging.getLogger(__name__)

INSTALL_DASK = "pip install 'attnbias[dask]' (in a clone: pip install -e '.[dask]')"
# A chunk is worth shipping when its batched program outweighs its fixed costs: a step costs
# ~0.35 ms plus ~11 µs per run here (flat from ~64 runs on), and a chunk that is part of a batch
# also trains up to ~35 stand-in runs (engine/sweep.py, plan); at 256 runs those add < 15 %.
MIN_CHUNK = 256
CHUNKS_PER_WORKER = 4  # a few chunks each, so a slow or lost worker delays the sweep little
RETRIES = 2  # re-runs of a task that raised (a dead worker's tasks are re-run by the scheduler)


class WorkerCannotWrite(ValueError):
    """A worker cannot write the results store (a ValueError: on the command line a usage
    error, exit code 2)."""


# Dask starts worker processes with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's
# reuse of freed large blocks: every tensor of a step is then mapped afresh and page-faulted in,
# and a text-md step takes 1.8× as long (benchmarks/bench_worker_malloc.py). Our local
# workers start without it: not in Dask's config, nor inherited from this process, where any
# earlier Dask nanny has left it.
MALLOC_TRIM = "MALLOC_TRIM_THRESHOLD_"
KEEP_FREED_MEMORY = f"distributed.nanny.pre-spawn-environ.{MALLOC_TRIM}"


class ClusterFailed(RuntimeError):
    """A task failed on every try (its workers kept dying); what finished is stored."""


def positive_int(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


def import_distributed():
    try:
        import distributed
    except ImportError as err:
        raise ImportError(f"--workers / --scheduler need Dask: {INSTALL_DASK}") from err
    return distributed


class Cluster:
    """A connected Dask client and how sweeps use it.

    chunk_size: runs per chunk of a synthetic sweep (None: automatic, see `chunk_size_for`).
    Build one with `Cluster.start(workers=N)` (a local cluster of N processes) or
    `Cluster.start(scheduler="tcp://host:8786")`, or wrap a `distributed.Client` you have."""

    def __init__(self, client, chunk_size: int | None = None, retries: int = RETRIES):
        if chunk_size is not None:
            positive_int(chunk_size, "chunk_size")
        self.client = client
        self.chunk_size = chunk_size
        self.retries = retries
        self._shared: dict[int, tuple[Callable, object]] = {}  # id → (reference, future)

    @classmethod
    @contextmanager
    def start(
        cls,
        workers: int | None = None,
        scheduler: str | None = None,
        chunk_size: int | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> Iterator[Cluster]:
        """A local cluster of `workers` processes (one thread each, on 127.0.0.1), or a client
        of the scheduler at `scheduler`, which must answer as a Dask scheduler within
        `connect_timeout` seconds (ValueError saying so otherwise); closed (the local cluster
        stopped) on exit."""
        if (workers is None) == (scheduler is None):
            raise ValueError("give exactly one of workers (a local cluster) or scheduler")
        if workers is not None:
            positive_int(workers, "workers")
        check_scalar(connect_timeout, "connect_timeout", low=0.0, include_low=False)
        distributed = import_distributed()
        import dask

        if scheduler is not None:
            check_scheduler(scheduler, connect_timeout)
            try:
                client = distributed.Client(scheduler, timeout=connect_timeout)
            except OSError as err:
                raise ValueError(unreachable(scheduler, connect_timeout, err)) from err
            with client:
                yield cls(client, chunk_size)
            return
        with (
            dask.config.set({KEEP_FREED_MEMORY: None}),  # read by each nanny as it starts
            environ_without(MALLOC_TRIM),  # for the cluster's life: restarted workers too
            distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                # the dashboard needs bokeh; without it, ask for none rather than a warning
                dashboard_address=":0" if has_module("bokeh") else None,
            ) as local,
            distributed.Client(local) as client,
        ):
            yield cls(client, chunk_size)

    def workers(self) -> int:
        """Workers connected now (waits for the first one, saying so)."""
        count = len(self.client.scheduler_info()["workers"])
        if count == 0:
            address = self.client.scheduler.address
            logger.info("waiting for a worker to join the scheduler at %s", address)
            self.client.wait_for_workers(1)
            count = len(self.client.scheduler_info()["workers"])
        return count

    def dashboard(self) -> str | None:
        services = self.client.scheduler_info().get("services", {})
        return self.client.dashboard_link if "dashboard" in services else None

    def chunk_size_for(self, runs: int) -> int:
        """The set chunk size, or runs / (CHUNKS_PER_WORKER × workers), at least MIN_CHUNK."""
        if self.chunk_size is not None:
            return self.chunk_size
        return max(MIN_CHUNK, math.ceil(runs / (CHUNKS_PER_WORKER * self.workers())))

    def check_writable(self, root: Path) -> None:
        """WorkerCannotWrite naming the first connected worker that cannot write `root`."""
        # a worker whose last task killed it is restarting and cannot answer: skip it, like a
        # worker that joins later. Comm errors are OSErrors (store_problem returns its own as
        # text); any other error of the check is raised.
        answers = self.client.run(store_problem, str(root), on_error="return")
        for answer in answers.values():
            if isinstance(answer, Exception) and not isinstance(answer, OSError):
                raise answer
        problems = [p for _, p in sorted(answers.items()) if isinstance(p, str)]
        if problems:
            raise WorkerCannotWrite(problems[0])

    def submit(self, fn: Callable, *args, name: str):
        """One task, retried if it raises; `name` (unique per task) shows on the dashboard."""
        return self.client.submit(fn, *args, key=name, retries=self.retries, pure=False)

    def shared(self, value):
        """A future of `value` held by every worker (scattered once, whatever the number of
        tasks that take it): pass it to `submit` in place of a large argument, which would
        otherwise be pickled into every task, and the client keeps each task's bytes until its
        result is read. Dropped when the caller's value is (a weak reference), or with the
        cluster where the value takes none; tasks still waiting keep it on the workers."""
        found = self._shared.get(id(value))
        if found is not None and found[0]() is value:
            return found[1]
        (future,) = self.client.scatter([value], broadcast=True, hash=False)
        key = id(value)
        try:
            ref = weakref.ref(value, lambda _: self._shared.pop(key, None))
        except TypeError:  # takes no weak reference: kept while the cluster is

            def ref():
                return value

        self._shared[key] = (ref, future)
        return future

    def announce(self, what: str) -> None:
        link = self.dashboard()
        where = self.client.scheduler.address
        suffix = f"; {link}" if link else ""
        logger.info("%s on %d Dask worker(s) at %s%s", what, self.workers(), where, suffix)


def check_scheduler(address: str, timeout: float) -> None:
    """ValueError unless a Dask scheduler at `address` answers the identity handshake within
    `timeout` seconds (on a thread of its own: the caller may be in an event loop)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect

    async def identity():
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    def ask():
        return asyncio.run(asyncio.wait_for(identity(), timeout))

    with ThreadPoolExecutor(1) as pool:
        try:
            reply = pool.submit(ask).result()
        except asyncio.TimeoutError as err:
            raise ValueError(unreachable(address, timeout, "no answer")) from err
        except Exception as err:  # any failure of the peer's: refused, closed, garbled, bad address
            raise ValueError(unreachable(address, timeout, err)) from err
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        what = reply.get("type") if isinstance(reply, dict) else type(reply).__name__
        raise ValueError(unreachable(address, timeout, f"the peer answered as {what!r}"))


def unreachable(address: str, timeout: float, why) -> str:
    reason = " ".join(str(why).split()) or type(why).__name__
    return f"could not reach a Dask scheduler at {address} within {timeout:g} s: {reason[:200]}"


@contextmanager
def environ_without(name: str) -> Iterator[None]:
    """os.environ without `name` inside the block (what child processes inherit)."""
    saved = os.environ.pop(name, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[name] = saved


def has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def store_problem(root: str) -> str | None:
    """Why this process cannot write the results store at `root` (None if it can): a file is
    created and removed in its runs directory."""
    runs = Path(root) / "runs"
    try:
        runs.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=runs):
            pass
    except OSError as err:
        return (
            f"the Dask worker on {socket.gethostname()} (PID {os.getpid()}) cannot write the "
            f"results store {runs}: {err.strerror or err}; give every worker a shared, "
            "writable --out"
        )
    return None


def task_name(what: str, keys: list[str]) -> str:
    """A task key naming what it does, unique for its runs."""
    return f"attnbias-{what}-{config_key(sorted(keys))}"


# --- the cluster an experiment runs on ---------------------------------------------------------

ACTIVE: ContextVar[Cluster | None] = ContextVar("attnbias_cluster", default=None)


def as_cluster(cluster) -> Cluster | None:
    """A Cluster from a Cluster, a distributed.Client, or None (in-process)."""
    if cluster is None or isinstance(cluster, Cluster):
        return cluster
    distributed = import_distributed()
    if not isinstance(cluster, distributed.Client):
        raise TypeError(
            f"cluster must be an attnbias Cluster or a distributed.Client, got {type(cluster)}"
        )
    return Cluster(cluster)


def active_cluster() -> Cluster | None:
    """The cluster the running experiment sends its work to (None: in-process)."""
    return ACTIVE.get()


@contextmanager
def using(cluster) -> Iterator[None]:
    """Experiments run inside this send their sweeps and training runs to `cluster` (a
    Cluster, a distributed.Client, or None: in-process)."""
    token = ACTIVE.set(as_cluster(cluster))
    try:
        yield
    finally:
        ACTIVE.reset(token)
