"""A diverged run is a result of its own kind, never a crash (issue 28).

md-local with η = 1e300: ℓ1.5 and ℓ1.75 mirror descent leave float64's range at the first
step (w = |θ|^{1/(p−1)} with θ ≈ 1e300), while p = 2 (normalized GD) stays finite (its
iterates grow to about 1e301, and only their direction is measured). Before the fix the
command trained every run, warned "Mean of empty slice" while measuring and died drawing
("Data cannot be log-scaled"): exit 2 and no summary. Now each run is recorded finished or
diverged with its step, the summary is written and lists the diverged runs, and a figure that
cannot be drawn becomes a notice in it. Every test here runs with warnings as errors."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

from attnbias.cli import main
from attnbias.data import gaussian_unit
from attnbias.engine import Algorithm, RunSpec
from attnbias.engine.batch import RunBatch
from attnbias.experiment_registry import SYNTHETIC, load_config
from attnbias.experiments import plotting
from attnbias.experiments.base import run_experiment
from attnbias.experiments.runs import random_init
from attnbias.store import DIVERGED, FINISHED, ResultsStore

pytestmark = pytest.mark.filterwarnings("error")
simulate = importlib.import_module("attnbias.engine.simulate")  # the module, not the function


def md_local(tmp_path, ps: list[float]) -> dict:
    """`attnbias run` of an md-local config with an absurd step size; its summary.json."""
    config = tmp_path / "absurd.toml"
    config.write_text(
        'experiment = "md-local"\nlr = 1e300\n'
        f"ps = {ps}\nsteps = {[20] * len(ps)}\nseeds = 1\ngrid_points = 10\n"
    )
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--quick"]) == 0
    return json.loads((tmp_path / "out" / "md-local" / "summary.json").read_text())


def stored_status(tmp_path) -> dict[float, set]:
    """p → the statuses (with diverged_at) of its stored runs."""
    store = ResultsStore(tmp_path / "out" / "md-local")
    found: dict[float, set] = {}
    for record in map(store.load, store.keys()):
        found.setdefault(record.config["algorithm"]["p"], set()).add(
            (record.status, record.info.get("diverged_at"))
        )
    return found


@pytest.mark.slow
def test_every_run_diverged_and_the_summary_is_written_through_the_cli(tmp_path):
    summary = md_local(tmp_path, [1.5, 1.75])
    assert summary["runs"] == 4 and len(summary["diverged"]) == 4  # 1 seed + 1 zero-init per p
    assert all(d["diverged_at"] == 1 for d in summary["diverged"])
    assert stored_status(tmp_path) == {1.5: {(DIVERGED, 1)}, 1.75: {(DIVERGED, 1)}}
    statuses = {c["status"] for c in summary["claims"]}
    assert statuses <= {"inconclusive", "not applicable"}, statuses  # no verdict from no run
    assert summary["figures"] or summary["figure_notices"]


@pytest.mark.slow
def test_one_p_diverges_the_other_finishes_and_both_are_reported(tmp_path):
    summary = md_local(tmp_path, [1.5, 2.0])
    assert stored_status(tmp_path) == {1.5: {(DIVERGED, 1)}, 2.0: {(FINISHED, None)}}
    assert {d["algorithm"] for d in summary["diverged"]} == {"ℓ1.5-MD"}
    figures = summary["figures"]  # drawn, as PNG alone by default
    assert len(figures) == 1 and figures[0].endswith(".png") and "figure_notices" not in summary


def test_a_spectral_run_that_diverges_leaves_the_batch_stepping(tmp_path):
    """The SVD of a batch refuses a non-finite matrix: one diverged spectral run stopped every
    run of its batch. Now it is recorded diverged and the other runs step as in a batch of
    finite runs (bit for bit)."""
    problem = gaussian_unit(n=4, T=5, d=6, seed=1)
    W0 = random_init((6, 6), 1.0, 1)

    def run(*lrs: float):
        specs = [
            RunSpec({}, problem, Algorithm("S", "spectral", lr), 6, {"W": W0}, grid_points=6)
            for lr in lrs
        ]
        done = []
        simulate.simulate(RunBatch.from_specs(specs), np.arange(7), done.append)
        return done[0]

    diverging, healthy = run(1e308, 0.1), run(0.2, 0.1)
    assert diverging.diverged_between(0) is not None and diverging.diverged_between(1) is None
    assert healthy.diverged_between(0) is None
    np.testing.assert_array_equal(diverging.final["W"][1], healthy.final["W"][1])


def test_a_figure_that_cannot_be_drawn_becomes_a_notice_and_the_summary_stays():
    def draw():
        plotting.subplots(1, 1)  # an open figure that must be closed
        raise ValueError("Data cannot be log-scaled because all values are <= 0.")

    summary = {"claims": [], "runs": 2, "diverged": [{"run": "a"}, {"run": "b"}]}
    out = plotting.with_figures(summary, draw)
    assert out["figures"] == [] and out["claims"] == []
    assert out["figure_notices"] == [
        "figures not drawn (2 of 2 runs diverged): Data cannot be log-scaled because all "
        "values are <= 0."
    ]
    assert plotting.plt.get_fignums() == []


def test_a_store_refusal_while_drawing_is_no_notice():
    from attnbias.store import UnsafeStore

    def draw():
        plotting.subplots(1, 1)
        raise UnsafeStore("ROOT/md-local/figure.png is not the store's (a link?)")

    with pytest.raises(UnsafeStore):  # the store's refusal stops the command, as elsewhere
        plotting.with_figures({"claims": [], "runs": 1}, draw)
    assert plotting.plt.get_fignums() == []


def poison(monkeypatch) -> None:
    """Every run's state becomes NaN after its first stretch of steps: all runs diverge, by the
    engine's own detection, whatever the optimiser. The batches step with torch, through
    `advance_torch` (the compiled backend, where installed, would step around the poison)."""
    monkeypatch.setenv("ATTNBIAS_ENGINE_BACKEND", "torch")
    advance = simulate.advance_torch

    def poisoned(batch, *args):
        result = advance(batch, *args)
        for x in batch.state():
            x.fill_(float("nan"))
        return result

    monkeypatch.setattr(simulate, "advance_torch", poisoned)


# experiment: overrides that keep it small (one seed, few steps)
FAMILIES = {
    "md-local": {"steps": [30, 30, 30]},
    "md-joint": {"steps": 30},
    "ngd-fixed": {"steps": 30},
    "ngd-joint": {"steps": 30, "selection_seeds": 1, "rate_extensions": 0},
    "kq-nuclear": {"steps": 30},
    "atlas": {"steps": 30},
    "antipodal": {"steps": 30},
    "ngd-rates": {},
    "local-global": {},
    "md-plain": {},
    "joint-rates": {},
    "trajectory-lemmas": {},
    "reexamine-adam": {},
    "reexamine-polyak": {},
    "reexamine-muon": {},
}


def test_every_synthetic_experiment_is_tried_with_all_its_runs_diverged():
    assert set(FAMILIES) == set(SYNTHETIC)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_all_diverged_runs_are_measured_summarised_and_drawn_without_a_crash(
    name, tmp_path, monkeypatch
):
    """Warnings are errors here (pytestmark): no "Mean of empty slice" from measuring nothing."""
    poison(monkeypatch)
    config = load_config(name, quick=True, overrides={"seeds": 1, **FAMILIES[name]})
    summary = run_experiment(config, tmp_path / name)
    assert summary["runs"] > 0 and len(summary["diverged"]) == summary["runs"]
    written = json.loads((tmp_path / name / "summary.json").read_text())
    assert written["diverged"] == summary["diverged"]
    assert summary["figures"] or summary["figure_notices"]
    statuses = {c["status"] for c in summary["claims"]}
    assert statuses <= {"inconclusive", "not applicable"}, statuses  # no verdict from no run
