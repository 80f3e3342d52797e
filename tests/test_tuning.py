"""Speed at tuned steps (issue 29): how a step is scaled, scored and chosen, and that the seeds
it is chosen on are not the seeds it is judged on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnbias.config import ConfigError
from attnbias.curves import Curves
from attnbias.engine import Algorithm
from attnbias.experiment_registry import load_config
from attnbias.experiments import atlas, ngd_fixed, ngd_joint, tuning_sweep
from attnbias.experiments.runs import scaled_step, seeds
from attnbias.judging.verdicts import ngd
from attnbias.judging.verdicts.tuning import (
    chosen_factor,
    final_score,
    grid_edge,
    rate_score,
    rate_scores,
)

STEPS = np.array([0, 1, 2, 4, 8])


def test_a_factor_scales_the_rate_or_polyaks_step_not_its_cap():
    gd = scaled_step(Algorithm("GD", "gd", 0.5), 2.0)
    polyak = scaled_step(Algorithm("Polyak", "polyak", 1e6), 4.0)
    assert gd.lr == 1.0
    assert polyak.lr == 1e6 and polyak.c == 0.25  # the step (L − L*)/(c‖∇L‖²) is 4× longer


def test_a_diverged_run_scores_worst_and_an_underflowed_loss_best():
    falling = Curves(STEPS, {"loss": np.array([[0.7, 0.1, 1e-3, 1e-9, 0.0]])})
    assert math.isfinite(rate_score(falling, "loss"))  # 0 scores as float64's floor
    one_diverged = Curves(STEPS, falling.values, diverged=1)
    assert rate_score(one_diverged, "loss") == math.inf
    slower = Curves(STEPS, {"loss": np.array([[0.7, 0.5, 0.3, 0.1, 0.01]])})
    assert rate_score(falling, "loss") < rate_score(slower, "loss")


def test_a_final_gap_scores_where_the_runs_end_not_how_fast():
    """reexamine-muon chooses η by the median final gap: a run that falls late but ends
    lower beats one that falls early and stops; a diverged or empty group scores worst."""
    early = Curves(STEPS, {"gap": np.array([[0.5, 0.02, 0.02, 0.02, 0.02]] * 3)})
    late = Curves(STEPS, {"gap": np.array([[0.5, 0.5, 0.4, 0.3, 0.01]] * 3)})
    assert rate_score(early, "gap") < rate_score(late, "gap")
    assert final_score(late, "gap") == 0.01 < final_score(early, "gap")
    by_factor = {0.5: early, 2.0: late}
    assert chosen_factor(rate_scores(by_factor, "gap", "final")) == 2.0
    assert chosen_factor(rate_scores(by_factor, "gap")) == 0.5
    with pytest.raises(ValueError, match="score must be 'rate' or 'final', got 'last'"):
        rate_scores(by_factor, "gap", "last")
    median = Curves(STEPS, {"gap": np.array([[0, 0, 0, 0, v] for v in (0.1, 0.3, 0.2)])})
    assert final_score(median, "gap") == 0.2
    assert final_score(Curves(STEPS, late.values, diverged=1), "gap") == math.inf
    assert final_score(Curves(STEPS, {"gap": np.empty((0, 5))}), "gap") == math.inf


def test_reexamine_muon_chooses_steps_on_seeds_apart_from_those_judged():
    config = load_config("reexamine-muon")
    chosen_on = set(tuning_sweep.selection_seeds(config))
    assert len(chosen_on) == config.selection_seeds and not chosen_on & set(seeds(config))
    tags = tuning_sweep.tagged(config, atlas.specs, {"Muon": [4.0]}, "selection")
    assert {s.config["data"]["seed"] for s, _ in tags} == chosen_on
    assert {(s.algorithm.name, s.algorithm.lr) for s, _ in tags} == {("Muon", 0.8)}


def test_a_tie_goes_to_the_configs_step_and_the_edges_are_named():
    assert chosen_factor({0.5: 1.0, 1.0: 1.0, 2.0: 1.0}) == 1.0
    assert chosen_factor({0.25: math.inf, 4.0: math.inf, 0.5: math.inf}) == 0.5
    assert chosen_factor({0.5: -3.0, 1.0: -1.0, 2.0: -2.0}) == 0.5
    factors = [0.5, 1.0, 2.0]
    assert [grid_edge(factors, f) for f in factors] == ["smallest", "", "largest"]
    assert grid_edge([1.0], 1.0) == ""  # one setting, not tuned: no grid, no edge


def test_polyak_is_tuned_through_its_c_at_each_cap_as_ngd_through_its_eta(tmp_path):
    """reexamine-polyak (issue 29, referee read 9): at each cap Polyak's 1/c is tuned on the
    selection seeds as NGD's η is (a Polyak at a c we picked against NGD at its best says
    little), the cap kept; the chosen steps are run on the evaluation seeds."""
    config = load_config("reexamine-polyak", quick=True, overrides={
        "seeds": 2, "steps": 12, "selection_seeds": 1, "rate_extensions": 0,
        "confirmation_seeds": 0, "caps": [1e2, 1e4]})  # fmt: skip
    names = [a.name for a in config.algorithms]
    _, groups, tuned = tuning_sweep.tuned_sweep(config, tmp_path, ngd_fixed.specs,
                                                ngd.FIXED_HEAD_METRICS, names)  # fmt: skip
    assert set(tuned.selection) == set(tuned.evaluation) == set(names)
    for name in names:
        assert sorted(tuned.selection[name]) == sorted(config.rate_factors)
        assert list(tuned.selection[name][1.0].seeds) == [1001]
        chosen = {tuned.chosen(name, m) for m in ngd.FIXED_HEAD_METRICS}
        assert chosen <= set(tuned.evaluation[name])
        assert all(list(tuned.evaluation[name][f].seeds) == [1, 2] for f in chosen)
    assert tuned.step_label("Polyak γ_b=100", "loss").startswith("1/c = ")
    capped = {a.name: a.lr for a in config.algorithms if a.optimizer == "polyak"}
    assert capped == {"Polyak γ_b=100": 1e2, "Polyak γ_b=1e4": 1e4}  # the cap kept
    assert set(groups) == set(names)


def test_the_grid_grows_past_the_edges_its_best_steps_sit_at():
    assert tuning_sweep.extended([0.5, 1.0, 2.0], {"largest"}) == [0.5, 1.0, 2.0, 4.0]
    assert tuning_sweep.extended([0.5, 1.0, 2.0], {"smallest", "largest"}) == [
        0.25, 0.5, 1.0, 2.0, 4.0]  # fmt: skip


@pytest.mark.parametrize("experiment, module", [("ngd-joint", ngd_joint), ("ngd-fixed", ngd_fixed)])
def test_steps_are_chosen_on_seeds_apart_from_those_judged(experiment, module):
    config = load_config(experiment)
    chosen_on = set(tuning_sweep.selection_seeds(config))
    assert len(chosen_on) == config.selection_seeds
    assert not chosen_on & set(seeds(config))
    specs = [s for s, _ in tuning_sweep.tagged(config, module.specs, {"GD": [2.0]}, "selection")]
    assert {s.config["data"]["seed"] for s in specs} == chosen_on
    gd_step = next(a.lr for a in config.algorithms if a.name == "GD")
    assert {s.algorithm.lr for s in specs} == {2.0 * gd_step}


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"seeds": 1001}, "seeds must be <= 1000"),
        ({"rate_factors": [2.0, 2.0]}, "rate_factors must hold at least 2 distinct factors"),
    ],
)
@pytest.mark.parametrize("experiment", ["ngd-joint", "ngd-fixed", "antipodal", "reexamine-muon"])
def test_a_config_that_would_mix_selection_and_evaluation_is_refused(fields, message, experiment):
    with pytest.raises(ConfigError, match=message):
        load_config(experiment, layers=[("test", fields)])


def test_every_factor_runs_those_algorithms_at_every_step_of_their_grid(tmp_path):
    """ngd-beats-gd compares rates at every step of the grid: GD and NGD run there on the
    evaluation seeds; the other tuned algorithms only at their chosen steps."""
    config = load_config(
        "ngd-fixed",
        quick=True,
        overrides={"seeds": 2, "steps": 30, "selection_seeds": 1, "rate_extensions": 0},
    )
    names = ("NGD", "GD", "Polyak")
    _, _, tuned = tuning_sweep.tuned_sweep(
        config, tmp_path, ngd_fixed.specs, ("loss",), names, every_factor=("NGD", "GD")
    )
    for name in ("NGD", "GD"):
        assert set(tuned.evaluation[name]) == set(config.rate_factors)
        assert all(c.seed_ids().size == config.seeds for c in tuned.evaluation[name].values())
    assert set(tuned.evaluation["Polyak"]) == {1.0, tuned.chosen("Polyak", "loss")}
