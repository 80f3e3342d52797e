"""The stated rules that decide joint-training rows a level cannot (issue 29): a run above its
level at the last step is refuted when the theorem's rate would have crossed the level within
the run (stuck above it), and inconclusive, with the step that would decide it, when not; W's
direction is judged by its misalignment against ‖W_t‖."""

from dataclasses import asdict

import numpy as np

from attnbias.judging.claims import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, verdict_text
from attnbias.judging.verdicts import ngd
from attnbias.theory_measures import steps_to_level
from claim_cases import falling, frozen, growing


def test_a_run_stuck_above_its_level_where_the_rate_would_have_crossed_it_is_refuted():
    groups = falling(0.3, 1.0)  # about 0.34 at the half step, 0.3 at the end
    assert ngd.still_falling(groups["GD"], "1-alignment/2", 0.2, *ngd.LOSS_RATE) == []
    claim = ngd.joint_convergence(groups, "1-alignment/2", 0.2, "W", ngd.LOSS_RATE)
    assert claim.status == NOT_SUPPORTED


def test_a_run_the_rate_could_not_have_brought_to_the_level_is_inconclusive_and_says_when():
    groups = falling(0.3, 1.0)
    (why,) = ngd.still_falling(groups["GD"], "1-alignment/2", 0.2, *ngd.MISALIGNMENT_RATE)
    assert "too short" in why and "Thm 3's rate" in why and "by step" in why
    claim = ngd.joint_convergence(groups, "1-alignment/2", 0.2, "W", ngd.MISALIGNMENT_RATE)
    assert claim.status == INCONCLUSIVE and "too short" in verdict_text(asdict(claim))


def test_the_step_named_is_where_the_rate_crosses():
    cross = steps_to_level(ngd.loss_order, 1000.0, 0.25)
    assert np.isclose(cross, 4000.0, rtol=1e-9)
    assert steps_to_level(lambda t: np.ones_like(np.asarray(t, float)), 10.0, 0.5) == np.inf


def test_frozen_runs_stay_inconclusive_for_the_float_floor():
    (why,) = ngd.still_falling(frozen(0.3)["GD"], "1-alignment/2", 0.05, *ngd.LOSS_RATE)
    assert "float64 floor" in why


def test_direction_by_slope_in_the_norm_reaches_every_verdict():
    assert ngd.direction_converges(growing(-2.0), "1-alignment/2", -1.0, "W").status == SUPPORTED
    flat = ngd.direction_converges(growing(0.0), "1-alignment/2", -1.0, "W")
    assert flat.status == NOT_SUPPORTED
    still = ngd.direction_converges(growing(-2.0, frozen_from=2), "1-alignment/2", -1.0, "W")
    assert still.status == INCONCLUSIVE and "float64 floor" in verdict_text(asdict(still))
    slopes = ngd.misalignment_in_norm(growing(-2.0)["GD"], "1-alignment/2")
    assert np.allclose(slopes, -2.0)
