"""Sweeps on a Dask cluster (engine/cluster.py): the same results as in-process, faults survived,
clear failures. Local clusters of two worker processes on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import attnbias
from attnbias.cli import main
from attnbias.engine.cluster import Cluster, WorkerCannotWrite
from attnbias.engine.sweep import References, plan, train_chunk, train_chunk_and_store
from attnbias.experiment_registry import load_config
from attnbias.experiments import md_local
from attnbias.experiments.base import run_experiment
from attnbias.store import MANIFEST, ResultsStore, tidy

distributed = pytest.importorskip("distributed")

SRC = str(Path(attnbias.__file__).parent.parent)
# md-local, small: 23 runs of one structure, three p (mixed in one batch), three lengths (each
# p's 4 figure runs, the diagonal's 8 runs of the two shorter p at the longest steps, 3 from zero).
SMALL = {"seeds": 4, "steps": [40, 60, 300], "grid_points": 12}
TOML = 'experiment = "md-local"\nseeds = 4\nsteps = [40, 60, 300]\ngrid_points = 12\n'
WHOLE = 10_000  # a chunk size holding the whole batch
RUNS = 23  # SMALL's runs (above)


def worker_env() -> dict:
    """This process's environment, with this checkout's attnbias first for worker processes."""
    path = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": SRC + (os.pathsep + path if path else ""),
        "OMP_NUM_THREADS": "1",
    }


@pytest.fixture(scope="module")
def client():
    os.environ["PYTHONPATH"] = worker_env()["PYTHONPATH"]  # spawned workers import this copy
    with (
        distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def config():
    return load_config("md-local", overrides=SMALL)


@pytest.fixture(scope="module")
def in_process(config, tmp_path_factory, one_thread):
    out = tmp_path_factory.mktemp("in-process")
    return out, run_experiment(config, out)


def sorted_table(out: Path):
    """The experiment's result table (the store's, for a bare store), in a fixed row order."""
    path = out / "metrics.parquet"
    table = pq.read_table(path) if path.exists() else ResultsStore(out).table()
    return table.to_pandas().sort_values(["run", "metric", "step"]).reset_index(drop=True)


def assert_same_results(a: Path, b: Path):
    """Exactly equal result tables (up to row order) and stored arrays of every run."""
    ta, tb = sorted_table(a), sorted_table(b)
    assert ta.shape == tb.shape and ta.shape[0] > 0
    assert ta.equals(tb)  # NaN equals NaN here; every other value bit for bit
    sa, sb = ResultsStore(a), ResultsStore(b)
    assert sa.keys() == sb.keys()
    for key in sa.keys():
        ra, rb = sa.load(key), sb.load(key)
        assert ra.arrays.keys() == rb.arrays.keys()
        for name in ra.arrays:
            np.testing.assert_array_equal(ra.arrays[name], rb.arrays[name], err_msg=name)


def manifests(out: Path) -> dict:
    """(inode, mtime) of every stored run's manifest: a rewritten run would change them."""
    return {
        p.parent.name: (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in (out / "runs").glob(f"*/{MANIFEST}")
        if not p.parent.name.startswith(".")  # a writer's staging directory
    }


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [4, WHOLE])
def test_cluster_sweep_gives_the_in_process_table(client, config, in_process, tmp_path, chunk_size):
    out, expected = in_process
    summary = run_experiment(config, tmp_path, cluster=Cluster(client, chunk_size=chunk_size))
    assert_same_results(out, tmp_path)
    assert [c["supported"] for c in summary["claims"]] == [
        c["supported"] for c in expected["claims"]
    ]
    assert summary["trained"] == RUNS and summary["svms_solved"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [1, 7, 33])
def test_chunks_of_a_larger_batch_end_bit_for_bit_as_in_it(tmp_path, chunk_size, one_thread):
    """123 runs: chunks need stand-ins for the hyper-parameter classes, the runs that follow
    them and the active count (sweep.plan)."""
    specs = md_local.specs(load_config("md-local", overrides={**SMALL, "seeds": 40}))
    for name, size in (("whole", None), ("chunked", chunk_size)):
        for chunk in plan(specs, [True] * len(specs), None, size):
            train_chunk_and_store(chunk, ResultsStore(tmp_path / name), References(), "cpu")
    assert_same_results(tmp_path / "whole", tmp_path / "chunked")


@pytest.mark.slow
def test_a_resumed_in_process_sweep_ends_as_an_uninterrupted_one(config, in_process, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(in_process[0] / "runs", out / "runs")
    for key in sorted(ResultsStore(out).keys())[::2]:  # as if killed before these were stored
        ResultsStore(out).discard(key)
    run_experiment(config, out)
    assert_same_results(in_process[0], out)


def test_a_retried_chunk_skips_the_runs_already_stored(config, tmp_path, one_thread):
    specs = md_local.specs(config)
    (chunk,) = plan(specs, [True] * len(specs), None, None)
    store = ResultsStore(tmp_path)
    early = [s for s in chunk.stored if s.steps == 40]  # an earlier try stored these
    train_chunk_and_store(
        plan(early, [True] * len(early), None, None)[0], store, References(), "cpu"
    )
    before = manifests(tmp_path)
    trained, _ = train_chunk(chunk, str(tmp_path), "cpu")  # trains all, stores the rest
    # the shortest p's figure runs (the zero-initialised runs take the longest p's steps)
    assert trained == len(specs) - len(early) and len(early) == SMALL["seeds"]
    after = manifests(tmp_path)
    assert {k: after[k] for k in before} == before  # not written twice
    assert len(after) == len(specs)


class KillOnce(distributed.WorkerPlugin):
    """Kills its worker process (os._exit) once, while a chunk runs and after a run was stored;
    the marker file records which runs were stored then."""

    def __init__(self, marker: str, runs: str):
        self.marker, self.runs = marker, runs

    def transition(self, key, start, finish, **kwargs):
        if finish != "executing" or "md-local" not in str(key):
            return
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        import threading

        def kill():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not manifests(Path(self.runs).parent):
                time.sleep(0.005)
            os.write(fd, json.dumps(manifests(Path(self.runs).parent)).encode())
            os.close(fd)
            os._exit(1)

        threading.Thread(target=kill, daemon=True).start()


@pytest.mark.slow
def test_a_killed_worker_loses_nothing_and_the_sweep_finishes(client, config, in_process, tmp_path):
    marker, out = tmp_path / "killed", tmp_path / "out"
    out.mkdir()
    client.register_plugin(KillOnce(str(marker), str(out / "runs")), name="kill-once")
    try:
        summary = run_experiment(config, out, cluster=Cluster(client, chunk_size=8))
    finally:
        client.unregister_worker_plugin("kill-once")
    stored_then = {k: tuple(v) for k, v in json.loads(marker.read_text()).items()}
    assert stored_then  # a worker really died, after storing runs
    after = manifests(out)
    assert {k: after[k] for k in stored_then} == stored_then  # kept, not written again
    assert summary["runs"] == RUNS and len(ResultsStore(out).keys()) == RUNS
    assert_same_results(in_process[0], out)  # the retried chunk's runs too
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the dead worker


class CannotWrite(distributed.WorkerPlugin):
    """Makes the workers' file creation fail as on a store they cannot reach."""

    def setup(self, worker):
        import tempfile

        self.saved = tempfile.TemporaryFile

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        tempfile.TemporaryFile = refuse

    def teardown(self, worker):
        import tempfile

        tempfile.TemporaryFile = self.saved


@pytest.mark.slow
def test_a_worker_that_cannot_write_the_store_fails_the_sweep_in_one_line(client, tmp_path, capsys):
    (tmp_path / "c.toml").write_text(TOML)
    client.register_plugin(CannotWrite(), name="cannot-write")
    try:
        with pytest.raises(WorkerCannotWrite, match="cannot write the results store"):
            run_experiment(load_config("md-local", overrides=SMALL), tmp_path / "a", cluster=client)
        address = client.scheduler.address
        argv = ["run", str(tmp_path / "c.toml"), "--scheduler", address, "--out", str(tmp_path)]
        assert main([*argv, "--quiet"]) == 2
    finally:
        client.unregister_worker_plugin("cannot-write")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write the results store" in err[0]


def worker_malloc_setting():
    return os.environ.get("MALLOC_TRIM_THRESHOLD_")


@pytest.mark.slow
def test_local_workers_keep_freed_memory_for_reuse(monkeypatch):
    """Dask's MALLOC_TRIM_THRESHOLD_=65536 makes a text-md step 1.8× as slow
    (benchmarks/bench_worker_malloc.py): our local workers start without it, even when this
    process has it, and the user's own Dask configuration and environment are left as they were."""
    import dask

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # as an earlier Dask nanny leaves it
    with Cluster.start(workers=1) as cluster:
        assert list(cluster.client.run(worker_malloc_setting).values()) == [None]
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"
    assert dask.config.get("distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_") == 65536


class AnswersOf:
    """A client stand-in whose workers give these answers to `run`."""

    def __init__(self, answers):
        self.answers = answers

    def run(self, function, *args, on_error="raise"):
        assert on_error == "return"  # one lost worker must not fail the whole check
        return self.answers


def test_a_restarting_worker_is_skipped_by_the_store_check_but_other_errors_are_not():
    from distributed.comm import CommClosedError

    gone = CommClosedError("in <TCP (closed) Scheduler Broadcast>: Stream is closed")
    Cluster(AnswersOf({"tcp://a": gone, "tcp://b": None})).check_writable(Path("/x"))
    with pytest.raises(WorkerCannotWrite, match="worker b"):
        Cluster(AnswersOf({"tcp://a": gone, "tcp://b": "worker b"})).check_writable(Path("/x"))
    with pytest.raises(ZeroDivisionError):
        Cluster(AnswersOf({"tcp://a": ZeroDivisionError(), "tcp://b": None})).check_writable(
            Path("/x")
        )


def test_cluster_flags_are_checked(tmp_path, capsys):
    (tmp_path / "c.toml").write_text(TOML)
    assert main(["run", str(tmp_path / "c.toml"), "--chunk-size", "4"]) == 2
    assert "--chunk-size needs --workers" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "c.toml"), "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err


def cli(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "attnbias.cli", *args],
        env=worker_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kwargs,
    )


@pytest.mark.slow
def test_a_killed_client_is_resumed_by_a_rerun(tmp_path, in_process):
    (tmp_path / "c.toml").write_text(TOML)
    out = tmp_path / "out" / "md-local"  # run --out names the results root
    args = ["run", str(tmp_path / "c.toml"), "--out", str(out.parent), "--quiet", "--workers", "2"]
    first = cli(*args, "--chunk-size", "3", start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not manifests(out) and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.01)
        os.kill(first.pid, signal.SIGKILL)  # the client, mid-sweep
        first.wait(30)
        stored_then = manifests(out)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # its orphaned worker processes too
    assert 0 < len(stored_then) < RUNS
    assert not (out / "summary.json").exists()
    second = cli(*args, "--chunk-size", "5")
    output, _ = second.communicate(timeout=240)
    assert second.returncode == 0, output
    after = manifests(out)
    assert len(after) == RUNS and {k: after[k] for k in stored_then} == stored_then
    assert json.loads((out / "summary.json").read_text())["reused"] == len(stored_then)
    assert_same_results(in_process[0], out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dask_command(what: str) -> list[str]:
    """`dask scheduler` / `dask worker` of this Python's distributed."""
    return [sys.executable, "-m", f"distributed.cli.dask_{what}"]


@pytest.mark.slow
def test_dask_scheduler_and_worker_processes_with_scheduler_flag(tmp_path, in_process):
    (tmp_path / "c.toml").write_text(TOML)
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    local = ["--host", "127.0.0.1", "--no-dashboard"]
    commands = [
        [*dask_command("scheduler"), "--port", str(port), *local],
        [*dask_command("worker"), address, "--nworkers", "2", "--nthreads", "1", *local],
    ]
    procs = []
    try:
        for command in commands:
            procs.append(
                subprocess.Popen(
                    command,
                    env=worker_env(),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        out = tmp_path / "out" / "md-local"  # run --out names the results root
        run = cli(
            "run", str(tmp_path / "c.toml"), "--out", str(out.parent),
            "--scheduler", address, "--chunk-size", "6",
        )  # fmt: skip
        output, _ = run.communicate(timeout=240)
        assert run.returncode == 0, output
        assert f"Dask worker(s) at {address}" in output
        assert_same_results(in_process[0], out)
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.mark.slow
def test_real_data_runs_are_one_task_each_and_a_retry_resumes_from_the_checkpoint(client, tmp_path):
    from attnbias.engine.cluster import using
    from attnbias.experiments.real_runs import RemoteRun, run_once

    store = ResultsStore(tmp_path)

    def train_fn(checkpoints):  # pickled by value: it runs on a worker
        half = checkpoints.read("half-way", 100)
        if half is None:  # the first try checkpoints, then its worker dies
            checkpoints.write("half-way", str(os.getpid()).encode())
            os._exit(1)
        metrics = tidy([0, 1], {"loss": [1.0, 0.5]})
        return metrics, {}, {"resumed_from": int(half), "pid": os.getpid()}

    with using(client):
        records = [run_once(store, {"seed": s}, train_fn) for s in (1, 2)]
    assert all(isinstance(r, RemoteRun) for r in records)
    for r in records:
        assert r.status == "finished" and r.info["resumed_from"] != r.info["pid"]
        assert r.metrics.num_rows == 2 and store.has(r.key)
    assert not any((tmp_path / "checkpoints").iterdir())  # superseded by the stored runs
    client.wait_for_workers(2, timeout=60)


@pytest.mark.slow
def test_real_data_runs_get_their_data_set_once_on_the_workers(client, tmp_path):
    from attnbias.engine.cluster import using
    from attnbias.experiments.real_runs import RemoteRun, run_once

    store = ResultsStore(tmp_path)
    data = np.full(4_000_000, 0.5)  # 32 MB, scattered once, not sent with each task

    def train_fn(checkpoints, values):
        metrics = tidy([0], {"loss": [float(values.sum())]})
        return metrics, {}, {"pid": os.getpid()}

    with using(client):
        records = [run_once(store, {"seed": s, "data": "halves"}, train_fn, data) for s in range(6)]
    assert all(isinstance(r, RemoteRun) for r in records)
    for r in records:
        assert r.status == "finished" and r.metrics["value"].to_pylist() == [2_000_000.0]
    assert {r.info["pid"] for r in records} <= set(client.run(os.getpid).values())
