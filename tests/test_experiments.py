"""Synthetic experiments: configs are validated, runs are stored once and reused, outputs exist."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from attnbias.experiments import EXPERIMENTS, SYNTHETIC, load_config, run_experiment
from attnbias.experiments.runs import curves, loglog_slope
from attnbias.store import ResultsStore, config_key

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = {
    "md-local": {"seeds": 2, "steps": [60, 80, 100]},
    "md-joint": {"steps": 60},
    "ngd-fixed": {"seeds": 2, "steps": 60},
    "ngd-joint": {"seeds": 2, "steps": 60},
    "antipodal": {"seeds": 2, "steps": 60},
    "kq-nuclear": {"seeds": 2, "steps": 60},
    "atlas": {"seeds": 2, "steps": 60},
}


@pytest.mark.parametrize("name", EXPERIMENTS)
@pytest.mark.parametrize("quick", [True, False])
def test_shipped_configs_are_valid(name, quick):
    config = load_config(name, quick=quick)
    assert config["experiment"] == name
    json.dumps(config)  # resolved configs are stored as JSON


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"seeds": 0}, "seeds must be >= 1"),
        ({"seeds": "many"}, "seeds must be an integer"),
        ({"lr": True}, "lr must be a real number"),
        ({"ps": [1.75, 0.5]}, "ps must be a non-empty list"),
        ({"steps": [10, "x", 10]}, r"steps\[1\] must be an integer"),
        ({"stepz": 3}, "unknown config field 'stepz'"),
        ({"device": "tpu"}, "device must be one of"),
    ],
)
def test_bad_config_is_refused_naming_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        load_config("md-local", quick=True, overrides=overrides)


def test_missing_field_is_named(tmp_path):
    config = load_config("ngd-fixed", quick=True)
    del config["target_alignment"]
    with pytest.raises(ValueError, match="'target_alignment' is missing"):
        run_experiment(config, tmp_path)


def test_bad_algorithm_table_is_refused():
    algorithms = [{"name": "GD", "optimizer": "gd", "lr": 0.1, "momentum": 0.5}]
    with pytest.raises(ValueError, match=r"algorithms\[0\]\.momentum applies only"):
        load_config("ngd-fixed", overrides={"algorithms": algorithms})


@pytest.mark.slow
def test_md_local_outputs_and_resume(tmp_path):
    config = load_config("md-local", quick=True, overrides=TINY["md-local"])
    summary = run_experiment(config, tmp_path)
    runs = 3 * (2 + 1)  # p × (seeds + one zero-initialised run)
    assert summary["runs"] == summary["trained"] == runs
    assert 0 < summary["svms_solved"] <= 3 * runs
    for claim in summary["claims"]:
        assert isinstance(claim["supported"], bool) and claim["evidence"]
        assert claim["evidence"]["diverged_runs_excluded"] == 0
    assert summary["scale"] == "quick: a smoke run, not evidence"
    assert summary["config_hash"] == config_key(config) and summary["code_version"]
    for path in summary["figures"]:
        assert (tmp_path / path.split("/")[-1]).stat().st_size > 1000
    assert json.loads((tmp_path / "summary.json").read_text())["claims"] == summary["claims"]
    assert json.loads((tmp_path / "config.json").read_text()) == config

    store = ResultsStore(tmp_path)
    assert len(store.keys()) == runs
    record = store.load(store.keys()[0])
    assert {"W_mm_1.75", "W_mm_2", "W_mm_3", "alpha", "final_W"} <= set(record.arrays)
    table = pq.read_table(tmp_path / "metrics.parquet")
    metrics = set(table.column("metric").to_pylist())
    assert {"loss", "divergence/1.75", "divergence/3", "alignment/2", "score/selected"} <= metrics
    points = sum(len(r.metrics) for r in map(store.load, store.keys()))
    assert table.num_rows == points  # one row per run × step × metric
    assert {"run", "algorithm.name", "data.seed"} <= set(table.column_names)

    # the diagonal of the 3×3 grid falls already in a few dozen steps
    grid = curves([store.load(k) for k in store.keys()])
    d = grid["ℓ2-MD"].mean("divergence/2")
    assert d[-1] < d[0]

    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("*") if p.is_file()}
    again = run_experiment(config, tmp_path)  # every run stored, same config: nothing redone
    assert again["reused_outputs"] and again["claims"] == summary["claims"]
    (tmp_path / "latest").unlink()  # no publication: the runs are reloaded and summarised
    again = run_experiment(config, tmp_path)
    assert again["trained"] == 0 and again["reused"] == runs
    assert again["claims"] == summary["claims"]
    assert stamps == {
        p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("*") if p.is_file()
    }


def test_changing_the_config_trains_only_new_runs(tmp_path):
    config = load_config("ngd-fixed", quick=True, overrides=TINY["ngd-fixed"])
    first = run_experiment(config, tmp_path)
    more = run_experiment({**config, "seeds": 3}, tmp_path)
    assert more["trained"] == first["runs"] // 2 and more["reused"] == first["runs"]


@pytest.mark.parametrize("name", [n for n in SYNTHETIC if n != "md-local"])
def test_every_experiment_runs_at_tiny_scale(name, tmp_path):
    summary = run_experiment(load_config(name, quick=True, overrides=TINY[name]), tmp_path)
    assert summary["claims"] and all(isinstance(c["supported"], bool) for c in summary["claims"])
    assert all((tmp_path / p.split("/")[-1]).exists() for p in summary["figures"])


def test_loglog_slope():
    steps = np.array([0, 1, 10, 100, 1000])
    assert loglog_slope(steps, 3.0 * steps.astype(float)) == pytest.approx(1.0)
    assert loglog_slope(steps, 1.0 / np.maximum(steps, 1) ** 2) == pytest.approx(-2.0)
