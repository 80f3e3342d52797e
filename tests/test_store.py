"""The results store never contradicts itself: damaged runs are redone, leftovers of killed
writers go, one writer at a time, non-finite runs are stored as diverged, JSON is strict."""

import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import attnbias.store as store_module
from attnbias.data import gaussian_unit
from attnbias.engine import Algorithm, RunSpec
from attnbias.engine.sweep import run_sweep
from attnbias.store import (
    DIVERGED,
    FINISHED,
    DamagedRun,
    ResultsStore,
    StoreBusy,
    json_text,
    tidy,
    write_files_at,
    write_manifest,
)

pytestmark = pytest.mark.usefixtures("one_thread")

SRC = str(Path(__file__).resolve().parents[1] / "src")


def spec(seed=1, lr=0.1, name="GD", steps=30, loss="logistic", optimizer="gd", **kwargs):
    return RunSpec(
        {"seed": seed},
        gaussian_unit(3, 4, 5, seed=seed),
        Algorithm(name, optimizer, lr, **kwargs),
        steps,
        {"W": np.random.default_rng(seed).standard_normal((5, 5))},
        loss=loss,
        grid_points=10,
    )


def sweep(store, specs):
    return run_sweep(specs, store, progress=False)


def truncate(path: Path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def empty(path: Path):
    path.write_bytes(b"")


def flip_a_byte(path: Path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "name", ["metrics.parquet", "arrays.npz", "info.json", "config.json", "manifest.json"]
)
@pytest.mark.parametrize("damage", [truncate, empty, flip_a_byte, Path.unlink])
def test_a_damaged_run_is_reported_and_redone(tmp_path, caplog, name, damage):
    caplog.set_level("INFO", logger="attnbias")
    store = ResultsStore(tmp_path)
    specs = [spec(1), spec(2)]
    first = sweep(store, specs)
    damage(tmp_path / "runs" / specs[0].key / name)
    assert store.problem(specs[0].key) is not None
    again = sweep(store, specs)
    assert again.ran == 1 and again.skipped == 1
    if name != "manifest.json" or damage is not Path.unlink:  # no manifest: just not finished
        assert f"run {specs[0].key}" in caplog.text
    assert store.problem(specs[0].key) is None
    for before, after in zip(first.records, again.records):
        assert before.metrics.equals(after.metrics)
    assert len(store.table(keys=store.keys()).column("run").unique()) == 2


def test_loading_a_torn_run_raises_a_clear_error(tmp_path):
    store = ResultsStore(tmp_path)
    key = store.save({"a": 1}, tidy([0, 1], {"loss": [1.0, 0.5]}), {"W": np.eye(2)})
    truncate(tmp_path / "runs" / key / "arrays.npz")
    with pytest.raises(DamagedRun, match=f"run {key}"):
        store.load(key)


def test_leftovers_of_dead_writers_are_removed_live_ones_kept(tmp_path):
    store = ResultsStore(tmp_path)
    key = store.save({"a": 1}, tidy([0], {"loss": [1.0]}))
    runs = tmp_path / "runs"
    dead = [  # the store's own temporary names, of a writer that died
        runs / f".{key}-999999999-ab_c1x9z",
        runs / f".{key}-999999999-discarded",
        tmp_path / "outputs" / f".{key}-999999999-discarded",
        tmp_path / ".staging-999999999-q2w3e4r5",
    ]
    kept = [
        runs / f".{key}-{os.getpid()}-ab_c1x9z",  # a live writer's
        runs / f".{key}-x7ab_q2",  # no PID (the previous version's): never ours to delete
        runs / ".notes",  # a user's own
        tmp_path / "outputs" / ".git",
    ]
    for d in dead + kept:
        d.mkdir(parents=True)
        (d / "metrics.parquet").write_bytes(b"partial")
    dead_files = [tmp_path / ".summary.json.999999999.tmp", tmp_path / ".latest.999999999.link"]
    for f in dead_files:
        f.write_text("partial")
    with store.lock():
        pass
    assert not [p for p in dead + dead_files if p.exists()]
    assert all(p.exists() for p in kept) and store.keys() == [key]


@pytest.mark.slow
def test_kill_at_random_moments_while_saving_leaves_a_consistent_store(tmp_path):
    """A process saving runs in a loop, killed (SIGKILL) at random moments: every run listed
    loads intact, and the next writer removes the leftovers."""
    script = textwrap.dedent(
        """
        import sys, numpy as np
        from attnbias.store import ResultsStore, tidy
        store = ResultsStore(sys.argv[1])
        def save(i):
            store.save({"i": i}, tidy(np.arange(500), {"loss": np.arange(500.0) + i}),
                       {"W": np.full((60, 60), float(i))}, {"i": i})
        save(int(sys.argv[2]))  # one finished run before the kills start, however slow
        print("ready", flush=True)
        for i in range(100000):
            save(i)
        """
    )
    rng = random.Random(0)
    store = ResultsStore(tmp_path)
    for trial in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path), str(-1 - trial)],
            env={**os.environ, "PYTHONPATH": SRC},
            stdout=subprocess.PIPE,
        )
        assert proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.05, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for key in store.keys():
            assert store.problem(key) is None
            record = store.load(key)
            i = record.info["i"]
            assert record.metrics.column("value").to_numpy()[-1] == 499.0 + i
            assert (record.arrays["W"] == i).all()
    assert store.keys()
    with store.lock():
        pass
    assert not [p for p in (tmp_path / "runs").iterdir() if p.name.startswith(".")]


HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from attnbias.store import ResultsStore
    with ResultsStore(sys.argv[1]).lock():
        print("locked", flush=True)
        time.sleep(60)
    """
)


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": SRC},
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline() == b"locked\n"
        message = f"{tmp_path} is being written by PID {holder.pid}; wait or use another --out"
        with pytest.raises(StoreBusy, match=message):
            with ResultsStore(tmp_path).lock():
                pass
    finally:
        holder.kill()
        holder.wait()
    with ResultsStore(tmp_path).lock():  # a dead holder's lock is free at once
        pass


def test_racing_savers_of_one_key_both_succeed(tmp_path):
    """Without the lock too (the store used directly): whoever renames second keeps the
    first, intact copy, and a reader never sees a run without its metrics."""
    script = textwrap.dedent(
        """
        import os, sys, numpy as np
        from attnbias.store import ResultsStore, tidy
        store = ResultsStore(sys.argv[1])
        for i in range(40):
            store.save({"i": i % 5}, tidy(np.arange(200), {"loss": np.ones(200) * (i % 5)}))
            for key in store.keys():
                assert store.load(key).metrics.num_rows == 200
        # Leave without interpreter shutdown: pyarrow's thread pool can abort it
        # ("terminate called without an active exception", apache/arrow#34314) after all
        # the work is done, which is not what this test is about.
        sys.stdout.flush()
        os._exit(0)
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path)],
            env={**os.environ, "PYTHONPATH": SRC},
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    store = ResultsStore(tmp_path)
    assert len(store.keys()) == 5 and all(store.problem(k) is None for k in store.keys())


def test_a_run_that_turns_non_finite_is_stored_as_diverged(tmp_path):
    """Plain ℓ1.1 mirror descent with lr = 1e40 overflows (w = θ^10); the run is stored with
    status "diverged" and the recorded steps bracketing where, the others finish."""
    store = ResultsStore(tmp_path)
    huge = spec(2, lr=1e40, name="MD-huge", loss="exponential", optimizer="md", p=1.1)
    runs = [spec(1, loss="exponential"), huge]
    report = sweep(store, runs)
    fine, bad = report.records
    assert fine.status == FINISHED and fine.info["status"] == FINISHED
    assert bad.status == DIVERGED and [r.key for r in report.diverged] == [bad.key]
    assert 0 <= bad.info["last_finite_step"] < bad.info["diverged_at"] <= 30
    values = bad.metrics.column("value").to_numpy()
    step = bad.metrics.column("step").to_numpy()
    assert np.isfinite(values[step <= bad.info["last_finite_step"]]).any()
    json.loads((tmp_path / "runs" / bad.key / "info.json").read_text())  # strict JSON


def test_simulate_flags_a_batch_whose_parameters_hold_nan():
    from attnbias.engine import RunBatch, simulate

    specs = [spec(1), spec(2)]
    batch = RunBatch.from_specs(specs)
    batch.params[0][1, 0, 0] = float("nan")
    finished = []
    simulate(batch, np.array([0, 5, 10, 30]), finished.append)
    (done,) = finished
    assert done.diverged_between(0) is None
    assert done.diverged_between(1) == (-1, 0)


def test_json_is_strict():
    text = json_text({"a": float("nan"), "b": [np.float64("inf"), 1.5], "c": np.int64(3)})
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON")) == {
        "a": None,
        "b": [None, 1.5],
        "c": 3,
    }


def assert_same_record(kept, loaded):
    assert kept.key == loaded.key and kept.status == loaded.status
    assert kept.config == loaded.config and kept.info == loaded.info
    assert kept.metrics.schema == loaded.metrics.schema
    for column in loaded.metrics.column_names:  # (NaN as NaN: Table.equals says unequal)
        np.testing.assert_array_equal(kept.metrics[column].to_numpy(), loaded.metrics[column])
    assert kept.arrays.keys() == loaded.arrays.keys()
    for name, array in loaded.arrays.items():
        assert kept.arrays[name].dtype == array.dtype
        np.testing.assert_array_equal(kept.arrays[name], array, strict=True)


def test_a_sweep_returns_the_runs_it_trained_as_the_store_reads_them(tmp_path, monkeypatch):
    """The runs trained now come back without being read again (303 reads were ~1.5 s of
    md-local), identical to what the store reads; runs found stored are read."""
    store = ResultsStore(tmp_path)
    stored_before = spec(3)
    sweep(store, [stored_before])
    huge = spec(2, lr=1e40, name="MD-huge", loss="exponential", optimizer="md", p=1.1)
    kept_trajectory = RunSpec(
        {"seed": 4},
        gaussian_unit(3, 4, 5, seed=4),
        Algorithm("MD", "md", 0.1, p=1.5),
        30,
        {"W": np.zeros((5, 5))},
        grid_points=10,
        keep_trajectory=True,
    )
    runs = [spec(1, loss="exponential"), huge, stored_before, kept_trajectory]
    read = []
    load = ResultsStore.load
    monkeypatch.setattr(ResultsStore, "load", lambda self, key: read.append(key) or load(self, key))
    report = sweep(store, runs)
    assert read == [stored_before.key]
    assert [r.key for r in report.records] == [s.key for s in runs]
    assert report.records[1].status == DIVERGED
    assert "trajectory_W" in report.records[3].arrays
    for record in report.records:
        assert_same_record(record, load(store, record.key))


def test_save_record_is_what_load_reads(tmp_path):
    store = ResultsStore(tmp_path)
    arrays = {"a": np.arange(6.0).reshape(2, 3).T, "i": np.array([1, 2], dtype=np.int32)}
    info = {"status": FINISHED, "gap": float("nan"), "note": "ℓp"}
    config = {"seed": 1, "p": (1.5, 2), "path": Path("x")}  # a tuple and a str(...) value
    record = store.save_record(
        config, tidy(np.arange(3), {"loss": [1.0, 0.5, np.nan]}), arrays, info
    )
    arrays["a"][0, 0] = 99.0  # the caller's arrays are not the record's
    assert_same_record(record, store.load(record.key))


@pytest.mark.parametrize("buffered", [True, False])
def test_a_saved_run_s_files_and_manifest_are_those_written_to_files(
    tmp_path, monkeypatch, buffered
):
    """save_record writes each file from its bytes in memory and lists their digests without
    reading them back (arrays above BUFFERED_BYTES stream to their file and are read back):
    either way the bytes are those the libraries write to a file, and the manifest is the
    one write_manifest_at makes by reading the directory."""
    if not buffered:
        monkeypatch.setattr(store_module, "BUFFERED_BYTES", 0)
    store = ResultsStore(tmp_path / "store")
    metrics = tidy(np.arange(4), {"loss": [1.0, 0.5, 0.25, np.nan], "norm/2": [1, 2, 3, 4]})
    arrays = {"W": np.arange(12.0).reshape(3, 4), "alpha": np.array([2, 0, 1])}
    key = store.save({"seed": 3}, metrics, arrays, {"status": FINISHED})
    run = tmp_path / "store" / "runs" / key
    written = tmp_path / "written"
    written.mkdir()
    pq.write_table(metrics, written / "metrics.parquet")
    np.savez(written / "arrays.npz", **arrays)
    for name in ("metrics.parquet", "arrays.npz"):
        assert (run / name).read_bytes() == (written / name).read_bytes()
    for name in ("info.json", "config.json"):
        (written / name).write_bytes((run / name).read_bytes())
    fields = json.loads((run / "manifest.json").read_text())
    write_manifest(written, **{k: v for k, v in fields.items() if k != "files"})
    assert (run / "manifest.json").read_bytes() == (written / "manifest.json").read_bytes()


@pytest.mark.parametrize("name", ["taken", "manifest.json"])
def test_write_files_at_writes_through_no_name_someone_put_there(tmp_path, name):
    """A file or a link put in the directory at one of its names (the manifest's included)
    is refused, and what it points to is left as it was."""
    target = tmp_path / "target"
    target.write_bytes(b"someone's")
    directory = tmp_path / "run"
    directory.mkdir()
    (directory / name).symlink_to(target)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(FileExistsError):
            write_files_at(fd, {"taken": b"ours"}, key="k")
    finally:
        os.close(fd)
    assert target.read_bytes() == b"someone's"


def test_a_cap_written_inf_is_a_number_in_the_table_beside_finite_ones(tmp_path):
    """Polyak's γ_b = ∞ is keyed "inf" (JSON has no ∞): the table's algorithm.lr column holds
    it as the float ∞ beside the finite caps, not a string that cannot merge with them."""
    store = ResultsStore(tmp_path)
    keys = [
        store.save({"algorithm": {"lr": lr}}, tidy(np.arange(2), {"loss": [1.0, 0.5]}))
        for lr in (1e6, "inf")
    ]
    column = store.table(keys=keys).column("algorithm.lr")
    assert column.type == pa.float64() and sorted(set(column.to_pylist())) == [1e6, math.inf]


def test_the_table_repeats_each_run_s_key_status_and_config_scalars_on_its_rows(tmp_path):
    store = ResultsStore(tmp_path)
    configs = [
        {"seed": 1, "lr": 0.5, "name": "ℓ1.75-MD", "zero": True, "data": {"n": 6, "x": [1, 2]}},
        {"seed": 2, "lr": 1e-300, "name": "", "zero": False, "data": {"n": 7}, "only": 3},
    ]
    keys = [
        store.save(c, tidy(np.arange(r), {"loss": np.linspace(1, 0, r), "gap": np.full(r, np.nan)}))
        for r, c in zip((3, 5), configs)
    ]
    table = store.table(keys=keys)
    assert table.num_rows == 2 * 3 + 2 * 5
    expected = {"run": pa.string(), "status": pa.string(), "seed": pa.int64(), "lr": pa.float64()}
    expected |= {"name": pa.string(), "zero": pa.bool_(), "data.n": pa.int64(), "only": pa.int64()}
    assert {name: table.schema.field(name).type for name in expected} == expected
    assert "data.x" not in table.column_names  # not a scalar
    rows = table.to_pylist()
    for r, (key, config) in enumerate(zip(keys, configs)):
        mine = rows[:6] if r == 0 else rows[6:]
        assert {row["run"] for row in mine} == {key} and {row["status"] for row in mine} == {
            FINISHED
        }
        for name in ("seed", "lr", "name", "zero"):
            assert all(row[name] == config[name] for row in mine)
        assert all(row["data.n"] == config["data"]["n"] for row in mine)
        assert all(row["only"] == config.get("only") for row in mine)  # null where absent
