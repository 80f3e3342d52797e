"""ngd-joint's speed rows on fresh seeds (referee read 13): all-beat-gd's GD-over-Polyak part
straddled 1 on the 10 evaluation seeds, and about 84 seeds would decide it. The rows are judged
on confirmation seeds at the steps chosen on the selection seeds, at every factor of the grid
(the loss is compared in rate at every step), the evaluation seeds' verdict kept as an earlier
look."""

from __future__ import annotations

from dataclasses import replace

import claim_cases
from attnbias.experiment_registry import load_config
from attnbias.experiments import ngd_joint, tuning_sweep
from attnbias.judging.claims import NOT_SUPPORTED, SUPPORTED

CONFIG = {"baseline": "GD", "fastest": "Polyak", "target_alignment": 0.95, "target_loss": 1e-3}


def test_the_speed_rows_are_judged_on_the_confirmation_the_evaluation_seeds_kept_as_a_look():
    seen_groups = claim_cases.joint(claim_cases.ngd_groups())
    # on the fresh seeds GD runs as NGD did and NGD as GD: NGD no longer beats GD
    swapped = {**seen_groups, "GD": seen_groups["NGD"], "NGD": seen_groups["GD"]}
    seen = claim_cases.every_step(seen_groups)
    fresh = claim_cases.every_step(swapped)
    tuned = replace(seen, confirmation=fresh.evaluation)
    made = {c.id: c for c in ngd_joint.claims(seen_groups, CONFIG, tuned)}
    row = made["ngd-joint/all-beat-gd"]
    assert row.status == NOT_SUPPORTED
    looks = row.evidence["earlier_looks"]
    assert list(looks) == ["the evaluation seeds"]
    assert looks["the evaluation seeds"]["verdict"] == SUPPORTED
    assert "earlier_looks" in made["ngd-joint/polyak-fastest"].evidence
    # without a confirmation the rows are the evaluation seeds' and carry no looks
    alone = {c.id: c for c in ngd_joint.claims(seen_groups, CONFIG, seen)}
    assert alone["ngd-joint/all-beat-gd"].status == SUPPORTED
    assert "earlier_looks" not in alone["ngd-joint/all-beat-gd"].evidence


def test_the_confirmation_runs_every_algorithm_at_every_factor_of_its_grid(tmp_path):
    config = load_config(
        "ngd-joint",
        quick=True,
        overrides={
            "seeds": 1,
            "steps": 20,
            "selection_seeds": 1,
            "rate_extensions": 0,
            "confirmation_seeds": 2,
            "confirmation_first": 2001,
        },
    )
    names = [a.name for a in config.algorithms]
    _, _, tuned = tuning_sweep.tuned_sweep(
        config, tmp_path, ngd_joint.specs, ("loss",), every_factor=names, confirm=names,
        confirm_grid=True,
    )  # fmt: skip
    for name in names:
        assert set(tuned.confirmation[name]) == set(tuned.evaluation[name])
        assert set(tuned.confirmation[name]) >= set(config.rate_factors)
        seeds = {int(s) for c in tuned.confirmation[name].values() for s in c.seed_ids()}
        assert seeds == {2001, 2002}


def test_where_the_cap_binds_is_placed_once_per_look_and_never_for_an_infinite_cap():
    seen_groups = claim_cases.joint(claim_cases.ngd_groups())
    seen = claim_cases.every_step(seen_groups)
    tuned = replace(seen, confirmation=dict(seen.evaluation))  # runs of their own
    asked = []

    def onsets(look):
        asked.append(look)
        return {}

    ngd_joint.claims(seen_groups, CONFIG, tuned, onsets, float("inf"))
    assert asked == []
    ngd_joint.claims(seen_groups, CONFIG, tuned, onsets, 1e6)
    # two sets of runs (the confirmation, the evaluation seeds), each read by both speed rows
    assert len(asked) == len({id(look.evaluation) for look in asked}) == 2
