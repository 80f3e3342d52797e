"""An experiment's published outputs: self-describing, swapped in together, reused when
current, readable from a read-only directory; diverged runs and --strict on the CLI."""

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from attnbias.cli import main
from attnbias.experiments import base, load_config, run_experiment
from attnbias.experiments.tuning_sweep import CONFIRMATION_SEED_BASE, SELECTION_SEED_BASE
from attnbias.store import MANIFEST, ResultsStore, config_key, manifest_problem

pytestmark = pytest.mark.usefixtures("one_thread")

SRC = str(Path(__file__).resolve().parents[1] / "src")
TINY = {"seeds": 2, "steps": 60}


def attnbias_process(*args):
    return subprocess.Popen(
        [sys.executable, "-m", "attnbias.cli", *args],
        env={**os.environ, "PYTHONPATH": SRC, "TQDM_DISABLE": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def assert_consistent(out: Path):
    """What a reader sees through out/: one publication, its files those its manifest names,
    summary and metrics table made from the config beside them."""
    summary = json.loads((out / "summary.json").read_text())
    config = json.loads((out / "config.json").read_text())
    assert summary["config_hash"] == config_key(config)
    published = (out / "latest").resolve()
    assert manifest_problem(published) is None
    assert json.loads((published / MANIFEST).read_text())["config_hash"] == config_key(config)
    runs = set(pq.read_table(out / "metrics.parquet").column("run").to_pylist())
    assert len(runs) == summary["runs"]
    seeds = set(pq.read_table(out / "metrics.parquet").column("data.seed").to_pylist())
    selection = range(
        SELECTION_SEED_BASE + 1, SELECTION_SEED_BASE + config.get("selection_seeds", 0) + 1
    )
    first = config.get("confirmation_first", 0)
    confirmation = range(first, first + config.get("confirmation_seeds", 0))
    assert all(seed > CONFIRMATION_SEED_BASE for seed in confirmation)
    # step tuning's and confirmation's seeds apart
    earlier = [
        s for first, n in config.get("earlier_confirmations", []) for s in range(first, first + n)
    ]
    assert all(seed > CONFIRMATION_SEED_BASE for seed in earlier)
    assert seeds == {*range(1, config["seeds"] + 1), *selection, *confirmation, *earlier}


def test_summary_records_config_hash_and_code_version(tmp_path):
    config = load_config("ngd-fixed", quick=True, overrides=TINY)
    summary = run_experiment(config, tmp_path)
    assert summary["config_hash"] == config_key(config.to_dict())
    assert summary["code_version"].startswith(base.__version__)
    assert_consistent(tmp_path)


@pytest.mark.slow
def test_a_rerun_of_another_config_killed_at_random_moments_never_mixes_outputs(tmp_path):
    """Config A published; config B (more seeds) started and SIGKILLed at random moments:
    every time, what out/ shows is all of A or all of B, never B's config beside A's summary."""
    first = load_config("ngd-fixed", quick=True, overrides=TINY)
    out = tmp_path / "ngd-fixed"  # run --out names the results root
    run_experiment(first, out)
    other = tmp_path / "other.toml"
    other.write_text('experiment = "ngd-fixed"\nseeds = 4\nsteps = 400\n')
    rng = random.Random(1)
    for _ in range(4):
        proc = attnbias_process("run", str(other), "--quick", "--out", str(tmp_path))
        time.sleep(rng.uniform(1.0, 4.0))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        assert_consistent(out)
    proc = attnbias_process("run", str(other), "--quick", "--out", str(tmp_path))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert_consistent(out)
    assert json.loads((out / "config.json").read_text())["seeds"] == 4
    # the first config's publication stays in its own place
    assert (out / "outputs" / config_key(first.to_dict()) / "summary.json").exists()


@pytest.mark.slow
def test_a_current_publication_is_returned_without_loading_a_run(tmp_path, monkeypatch):
    config = load_config("ngd-fixed", quick=True, overrides=TINY)
    summary = run_experiment(config, tmp_path)

    def no_loading(self, key):
        raise AssertionError("a run was loaded")

    monkeypatch.setattr(ResultsStore, "load", no_loading)
    start = time.perf_counter()
    again = run_experiment(config, tmp_path)
    assert time.perf_counter() - start < 1.0
    assert again["claims"] == summary["claims"] and again["reused_outputs"]
    assert again["figures"] == summary["figures"]
    # a newer code version, or a run gone, and the runs are summarised again
    monkeypatch.undo()
    monkeypatch.setattr(base, "code_version", lambda: "9.9.9")
    assert "reused_outputs" not in run_experiment(config, tmp_path)
    assert run_experiment(config, tmp_path)["reused_outputs"]
    key = json.loads((tmp_path / "latest" / MANIFEST).read_text())["runs"][0]
    ResultsStore(tmp_path).discard(key)
    again = run_experiment(config, tmp_path)
    assert again["trained"] == 1 and "reused_outputs" not in again


def snapshot(root: Path) -> dict:
    return {
        str(p.relative_to(root)): (p.lstat().st_mtime_ns, p.lstat().st_size)
        for p in root.rglob("*")
    }


@pytest.fixture
def read_only(monkeypatch):
    """Make a directory read-only. As root the permission bits do not stop writes, so opening
    a file under it for writing is then made to fail with EACCES, as it would for anyone else
    (the store's first write is its lock file); the unchanged tree shows that nothing else was
    written either."""
    made = []

    def make(root: Path):
        for p in [root, *root.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        made.append(root)
        if os.access(root, os.W_OK):  # root
            original = os.open

            def refuse(path, flags, *args, dir_fd=None, **kw):
                writes = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
                # the store opens files relative to a directory's handle: resolve from there
                where = Path(os.readlink(f"/proc/self/fd/{dir_fd}")) if dir_fd else Path()
                if writes and (where / path).resolve().is_relative_to(root.resolve()):
                    raise PermissionError(13, "Permission denied", str(path))
                return original(path, flags, *args, dir_fd=dir_fd, **kw)

            monkeypatch.setattr(os, "open", refuse)

    yield make
    for root in made:
        for p in [root, *root.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IWUSR)


@pytest.mark.slow
def test_a_read_only_complete_directory_is_reported_and_resummarised(
    tmp_path, read_only, monkeypatch, capsys
):
    out = tmp_path / "ro"
    args = ["reproduce", "md-joint", "--quick", "--seeds", "2", "--quiet"]
    assert main([*args, "--out", str(out)]) == 0
    read_only(out)
    before = snapshot(out)
    report = tmp_path / "docs" / "RESULTS.md"
    assert main([*args, "--out", str(out), "--report", str(report)]) == 0
    assert (
        "md-joint" in report.read_text() and (report.parent / "figures" / "md-joint.png").exists()
    )
    assert snapshot(out) == before
    # outputs out of date (another code version): not writable here, said in one line
    monkeypatch.setattr(base, "code_version", lambda: "9.9.9")
    capsys.readouterr()
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot be written" in err and "--from" in err and "Traceback" not in err
    # ... and re-summarised to another place from its runs, nothing trained
    new = tmp_path / "new"
    assert main([*args, "--out", str(new), "--from", str(out)]) == 0
    summary = json.loads((new / "md-joint" / "summary.json").read_text())
    assert summary["trained"] == 0 and summary["reused"] == summary["runs"]
    assert snapshot(out) == before


@pytest.mark.slow
def test_two_processes_on_one_directory(tmp_path):
    """Both finish cleanly: each either publishes or is refused with the lock's message;
    nothing is missing from the combined table."""
    args = ["reproduce", "md-joint", "--quick", "--seeds", "3", "--quiet", "--out", str(tmp_path)]
    procs = [attnbias_process(*args) for _ in range(2)]
    results = [(*p.communicate(timeout=300), p.returncode) for p in procs]
    assert 0 in [code for *_, code in results]
    for _, err, code in results:
        assert "Traceback" not in err
        assert code == 0 or (code == 2 and "is being written by PID" in err), err
    assert_consistent_joint(tmp_path / "md-joint")


def assert_consistent_joint(out: Path):
    summary = json.loads((out / "summary.json").read_text())
    table = pq.read_table(out / "metrics.parquet")
    assert (
        len(set(table.column("run").to_pylist()))
        == summary["runs"]
        == len(ResultsStore(out).keys())
    )


# ngd-fixed with a fourth algorithm, plain ℓ1.1-MD with lr = 1e40, whose runs overflow at once.
DIVERGING = """
experiment = "ngd-fixed"
seeds = 2
steps = 60
loss = "exponential"
algorithms = [
    {name = "GD", optimizer = "gd", lr = 1.0},
    {name = "NGD", optimizer = "ngd", lr = 0.1},
    {name = "Polyak", optimizer = "polyak", lr = 1e6, f_star = "optimal"},
    {name = "MD-huge", optimizer = "md", p = 1.1, lr = 1e40},
]
"""


@pytest.mark.slow
def test_diverged_runs_are_shown_left_out_and_fail_strict(tmp_path, capsys):
    config = tmp_path / "diverging.toml"
    config.write_text(DIVERGING)
    out = tmp_path / "ngd-fixed"  # run --out names the results root
    assert main(["run", str(config), "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "2 run(s) diverged and are left out of the claims: MD-huge seed 1" in printed
    assert "quick: a smoke run, not evidence" in printed
    text = (out / "summary.json").read_text()
    summary = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in summary.json"))
    assert [d["algorithm"] for d in summary["diverged"]] == ["MD-huge", "MD-huge"]
    assert all(c["evidence"]["diverged_runs_excluded"] == 2 for c in summary["claims"])
    assert main(["run", str(config), "--quick", "--quiet", "--out", str(tmp_path), "--strict"]) == 1
    assert "ngd-fixed: 2 run(s) diverged" in capsys.readouterr().err


@pytest.mark.slow
def test_strict_passes_when_every_claim_is_supported(tmp_path, capsys):
    # md-joint's quick runs (2,000 steps) stop short of ℓ3's W level: its full run length
    args = [
        "run",
        "md-joint",
        "seeds=2",
        "steps=20000",
        "--quick",
        "--quiet",
        "--out",
        str(tmp_path),
    ]
    assert main([*args, "--strict"]) == 0
    assert "--strict" not in capsys.readouterr().err


def test_a_claim_with_nothing_to_compare_is_not_applicable(tmp_path, capsys):
    config = tmp_path / "one-p.toml"
    config.write_text('experiment = "md-local"\nseeds = 2\nps = [2.0]\nsteps = [100]\n')
    assert main(["run", str(config), "--quick", "--quiet", "--out", str(tmp_path / "o")]) == 0
    assert "[not applicable] Off the diagonal" in capsys.readouterr().out
    summary = json.loads((tmp_path / "o" / "md-local" / "summary.json").read_text())
    (off,) = [c for c in summary["claims"] if c["claim"].startswith("Off the diagonal")]
    assert off["supported"] is None and off["status"] == "not applicable"
    args = ["run", str(config), "--quick", "--quiet", "--out", str(tmp_path / "o"), "--strict"]
    assert main(args) == 1
