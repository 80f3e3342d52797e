"""Referee read 14: a part Holm's correction decided prints the interval at the level that
decided it; a rule counting cases past a level of ours scales that level in its sensitivity
column (a count has no scale of its own)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest

import claim_cases
from attnbias.curves import Curves
from attnbias.judging.claims import (
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    Claim,
    Rule,
    mean_effect,
    sensitivity_text,
    verdict_columns,
)
from attnbias.judging.verdicts import atlas, md, ngd

RULE = Rule("share", ">", 0.9, "ours")


def share(values) -> Claim:
    return Claim("", rule=RULE, effect=mean_effect(np.asarray(values, dtype=float)))


def test_a_part_decided_at_holms_level_prints_that_interval():
    rng = np.random.default_rng(1)
    near = 0.93 + 0.02 * rng.standard_normal(40)  # clears 0.9 at 95 %, and at 98.3 %
    claim = Claim("at some radius", parts=[share(near), share(near - 0.2), share(near - 0.3)],
                  any_part=True)  # fmt: skip
    assert claim.status == SUPPORTED
    stored = asdict(claim)
    decided = stored["parts"][0]["correction"]
    assert decided["support"] < 0.99 and len(decided["interval"]) == 2
    wider = claim.parts[0].effect.at_confidence(decided["support"])
    assert decided["interval"] == [wider.low, wider.high]
    assert wider.low < claim.parts[0].effect.low  # the wider interval is the one printed
    effect = verdict_columns(stored)["effect"].split("<br>")[0]
    assert f"at Holm's {100 * decided['support']:.4g} % (3 parts): [{wider.low:.4g}," in effect
    # a part judged at 95 % prints no second interval
    alone = asdict(share(near))
    assert "Holm" not in verdict_columns(alone)["effect"]


def aligned(misalignment: float, seeds: int = 10) -> dict[str, Curves]:
    steps = np.array([0, 10, 100])
    values = np.tile([0.0, 1.0 - 10 * misalignment, 1.0 - misalignment], (seeds, 1))
    return {"NGD": Curves(steps, {"alignment/2": values}, seeds=np.arange(seeds))}


def test_global_convergence_scales_its_per_seed_level_in_the_sensitivity_column():
    robust = ngd.global_convergence(aligned(0.004), "NGD", 0.99)  # level 0.01: ½× is 0.005
    assert robust.status == SUPPORTED
    note = "of the per-case level (its count has no scale)"
    assert robust.sensitivity == {
        "0.5x": SUPPORTED,
        "2x": SUPPORTED,
        "fragile": False,
        "note": note,
    }
    assert sensitivity_text(asdict(robust)) == (
        "robust at ½× and 2× of the per-case level (its count has no scale)"
    )
    fragile = ngd.global_convergence(aligned(0.007), "NGD", 0.99)
    assert fragile.status == SUPPORTED
    assert fragile.sensitivity["0.5x"] == NOT_SUPPORTED and fragile.sensitivity["fragile"]
    assert sensitivity_text(asdict(fragile)).startswith("fragile (0.5x: not supported")


def falling_gap(final: float, slope: float, seeds: int = 10) -> Curves:
    steps = np.unique(np.geomspace(1, 3000, 30).astype(int))
    rng = np.random.default_rng(0)
    ends = final * np.exp(0.05 * rng.standard_normal(seeds))
    gaps = ends[:, None] * (steps / steps[-1])[None, :] ** slope
    return Curves(steps, {"gap/2": gaps}, seeds=np.arange(seeds))


def test_a_level_part_scaled_down_asks_again_whether_the_gap_still_falls():
    # median gap 0.03 below 0.05; at ½× (0.025) it is above, but still falling: inconclusive
    falling = atlas.level_part(falling_gap(0.03, -0.5), "M", "2", "gap", 0.05, "ours", 0.1)
    assert falling.status == SUPPORTED
    assert falling.sensitivity["0.5x"] == INCONCLUSIVE
    assert "has not converged" in falling.unmet_at["0.5x"][0]
    # a gap that has stopped falling is refuted at ½×
    flat = atlas.level_part(falling_gap(0.03, 0.0), "M", "2", "gap", 0.05, "ours", 0.1)
    assert flat.status == SUPPORTED and flat.sensitivity["0.5x"] == NOT_SUPPORTED


def test_nested_holm_families_print_the_whole_familys_size():
    """Two data sets of two parts each: a part refuted after both corrections names the 4
    hypotheses its level was corrected for (it named its own data set's 2)."""
    rng = np.random.default_rng(2)
    holds, fails = 0.95 + 0.01 * rng.standard_normal(30), 0.5 + 0.01 * rng.standard_normal(30)
    claim = Claim("every data set", parts=[
        Claim("one", parts=[share(holds), share(fails)]),
        Claim("two", parts=[share(holds), share(holds)]),
    ])  # fmt: skip
    assert claim.status == NOT_SUPPORTED
    refuted = asdict(claim)["parts"][0]["parts"][1]
    assert refuted["correction"]["parts"] == 4
    assert refuted["correction"]["refute"] == pytest.approx(1 - 0.05 / 4)


def test_a_scaled_verdict_left_open_by_a_precondition_prints_why():
    falling = atlas.level_part(falling_gap(0.03, -0.5), "M", "2", "gap", 0.05, "ours", 0.1)
    text = sensitivity_text(asdict(Claim("", parts=[falling])))
    assert text.startswith("fragile (0.5x: inconclusive (M has not converged")


def test_own_p_nearer_asks_at_half_the_level_whether_the_runs_settled():
    # mean ratio 0.2: below ¼; at ½× (0.125) above it
    still = md.own_p_nearer(claim_cases.md_settling(0.01, 40.0), claim_cases.JOINT_OWN,
                            claim_cases.SETTLING_APART, "d")  # fmt: skip
    assert still.status == SUPPORTED and still.sensitivity["0.5x"] == INCONCLUSIVE
    settled = md.own_p_nearer(claim_cases.md_settling(0.01, 1.5), claim_cases.JOINT_OWN,
                              claim_cases.SETTLING_APART, "d")  # fmt: skip
    assert settled.status == SUPPORTED and settled.sensitivity["0.5x"] == NOT_SUPPORTED
    assert settled.parts[0].evidence["effect_note"] == "8 of 8 runs end below 0.25"


def test_a_median_below_the_level_times_the_intervals_upper_end():
    """Read 14c: a median below the level already was extended to the level as if above it
    ("reaches 0.025 by step ~2.9e5" on a run of 3e5 steps): it is the interval's upper end that
    must still fall, and the reason times that."""
    gap = falling_gap(0.04, -0.5)  # median ~0.04 at step 3,000, falling like t^-0.5
    (reason,) = atlas.not_converged(gap, "M", "2", 0.05, 0.1, upper=0.06)
    assert "below 0.05 already, its interval's upper end 0.06" in reason
    assert "its interval's upper end reaches 0.05 by step ~4.3e+03" in reason  # 3000·1.2²
    (above,) = atlas.not_converged(gap, "M", "2", 0.02, 0.1, upper=0.06)
    assert "its median reaches 0.02 by step ~1.2e+04" in above  # 3000·2²
