"""The verdict model: rules, effects with confidence intervals, and how they decide."""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pytest
from scipy import stats

from attnbias.judging.claims import (
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_SUPPORTED,
    SUPPORTED,
    Claim,
    Effect,
    Rule,
    combine,
    decide,
    difference_of_means,
    mean_effect,
    paired_difference,
    proportion_effect,
    ratio_effect,
    slope_effect,
)

ABOVE_ONE = Rule("x", ">", 1.0, "test")


def effect(low, high, estimate=None):
    return Effect((low + high) / 2 if estimate is None else estimate, low, high, 10, "test")


@pytest.mark.parametrize(
    "low, high, status",
    [
        (1.5, 2.0, SUPPORTED),
        (0.2, 0.9, NOT_SUPPORTED),
        (0.9, 1.5, INCONCLUSIVE),
        (1.0, 1.5, INCONCLUSIVE),  # the boundary itself does not satisfy ">"
        (-math.inf, math.inf, INCONCLUSIVE),
        (math.nan, math.nan, INCONCLUSIVE),
    ],
)
def test_the_interval_decides_not_the_estimate(low, high, status):
    assert decide(ABOVE_ONE, effect(low, high, estimate=1.2)) == status


def test_an_unmet_precondition_makes_any_interval_inconclusive():
    assert decide(ABOVE_ONE, effect(5, 6), unmet=["runs hit the step cap"]) == INCONCLUSIVE
    assert decide(ABOVE_ONE, None) == INCONCLUSIVE
    assert decide(ABOVE_ONE, Effect(math.nan, 1, 2, 3, "t")) == INCONCLUSIVE


@pytest.mark.parametrize("comparison, supported", [(">", False), (">=", False), ("<", True)])
def test_each_comparison_is_applied(comparison, supported):
    rule = Rule("x", comparison, 1.0, "test")
    assert (decide(rule, effect(0.2, 0.5)) == SUPPORTED) is supported


def test_rules_refuse_unknown_comparisons_and_non_finite_thresholds():
    with pytest.raises(ValueError, match="comparison"):
        Rule("x", "=>", 1.0, "s")
    with pytest.raises(ValueError, match="threshold"):
        Rule("x", ">", math.nan, "s")


def test_combine_needs_every_part():
    assert combine([SUPPORTED, SUPPORTED]) == SUPPORTED
    assert combine([SUPPORTED, INCONCLUSIVE]) == INCONCLUSIVE
    assert combine([INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED]) == NOT_SUPPORTED
    assert combine([NOT_APPLICABLE]) == NOT_APPLICABLE
    assert combine([NOT_APPLICABLE, SUPPORTED]) == SUPPORTED


def test_claims_carry_status_and_sensitivity():
    robust = Claim("c", rule=ABOVE_ONE, effect=effect(5.0, 6.0))
    assert robust.status == SUPPORTED
    assert robust.sensitivity == {"0.5x": SUPPORTED, "2x": SUPPORTED, "fragile": False}
    fragile = Claim("c", rule=ABOVE_ONE, effect=effect(1.5, 1.8))
    assert fragile.status == SUPPORTED and fragile.sensitivity["2x"] == NOT_SUPPORTED
    assert fragile.sensitivity["fragile"]
    legacy = Claim("c", None, {"why": "one p"})
    assert legacy.status == NOT_APPLICABLE and legacy.sensitivity == {}
    both = Claim("c", parts=[robust, fragile])
    assert both.status == SUPPORTED and both.sensitivity["fragile"]
    assert Claim("c", parts=[robust], unmet=["cap"]).status == INCONCLUSIVE
    # a failed precondition of the whole claim outranks a failing part (a stalled run
    # says nothing either way); a part's own failure still makes the claim not supported
    failing = Claim("c", rule=ABOVE_ONE, effect=mean_effect([0.2, 0.3, 0.4, 0.5]))
    assert Claim("c", parts=[robust, failing]).status == NOT_SUPPORTED
    assert Claim("c", parts=[robust, failing], unmet=["stalled"]).status == INCONCLUSIVE
    # serialises with its rule, effect and parts (summary.json)
    data = asdict(both)
    assert data["parts"][0]["rule"]["threshold"] == 1.0 and data["status"] == SUPPORTED


def test_mean_interval_covers_the_true_mean_at_about_95_percent():
    rng = np.random.default_rng(0)
    covered = sum(
        (e := mean_effect(rng.normal(3.0, 1.0, 20))).low <= 3.0 <= e.high for _ in range(200)
    )
    assert 0.88 <= covered / 200 <= 0.99
    e = mean_effect(rng.normal(3.0, 1.0, 20))
    t = stats.t.interval(0.95, 19, loc=0, scale=1 / math.sqrt(20))
    assert (e.high - e.low) == pytest.approx(t[1] - t[0], rel=0.35)  # about the t interval


def test_degenerate_samples():
    assert mean_effect([2.0, 2.0, 2.0]).low == 2.0 == mean_effect([2.0, 2.0, 2.0]).high
    one = mean_effect([2.0])
    assert (one.low, one.high, one.n) == (-math.inf, math.inf, 1)
    empty = mean_effect([math.nan])
    assert empty.n == 0 and decide(ABOVE_ONE, empty) == INCONCLUSIVE


def test_pairing_removes_the_shared_seed_variation():
    rng = np.random.default_rng(1)
    seed_effect = rng.normal(0, 5, 30)
    a, b = seed_effect + 1.0 + rng.normal(0, 0.1, 30), seed_effect + rng.normal(0, 0.1, 30)
    paired, unpaired = paired_difference(a, b), difference_of_means(a, b)
    assert paired.low > 0.9 and paired.high < 1.1
    assert unpaired.low < 0 < unpaired.high  # the same data, unpaired, cannot tell
    with pytest.raises(ValueError, match="equal lengths"):
        paired_difference([1, 2], [1, 2, 3])


def test_ratio_is_a_geometric_mean_of_paired_ratios():
    b = np.array([1e-3, 1e-5, 1e-2, 1e-4])
    exact = ratio_effect(10 * b, b)
    assert exact.estimate == pytest.approx(10) and exact.low == pytest.approx(10)
    noisy = ratio_effect(b * np.array([8, 12, 9, 11]), b)
    assert noisy.low < 10 < noisy.high and noisy.low > 7


def test_proportion_interval_is_clopper_pearson():
    e = proportion_effect(100, 100)
    assert e.estimate == 1.0 and e.high == 1.0
    assert e.low == pytest.approx(0.025 ** (1 / 100), rel=1e-9)  # (α/2)^(1/n)
    assert proportion_effect(0, 0).n == 0


def test_slope_of_a_power_law_recovers_its_exponent():
    t = np.logspace(3, 5, 30)
    rng = np.random.default_rng(2)
    y = np.log(3.0 * t**-1.0) + rng.normal(0, 0.02, t.size)
    e = slope_effect(np.log(t), y)
    assert e.low < -1.0 < e.high and e.high - e.low < 0.05
    assert math.isnan(slope_effect([1, 1, 1], [1, 2, 3]).estimate)


def test_three_agreeing_seeds_are_not_enough_to_exclude_zero():
    """With three seeds a bootstrap interval is [min, max], so three positive differences would
    'exclude 0' — which happens one time in eight when there is no effect at all. The t
    interval (Student, two degrees of freedom) is what a referee would compute."""
    effect = paired_difference([0.1, 0.2, 0.3], [0.0, 0.0, 0.0])
    assert effect.low == pytest.approx(-0.0484138, rel=1e-5)
    assert effect.high == pytest.approx(0.4484138, rel=1e-5)
    assert decide(Rule("d", ">", 0.0, "s"), effect) == INCONCLUSIVE
    # ten seeds of the same spread do
    ten = paired_difference(np.linspace(0.1, 0.3, 10), np.zeros(10))
    assert ten.low > 0 and decide(Rule("d", ">", 0.0, "s"), ten) == SUPPORTED
    # Welch for independent samples: the interval scipy.stats.ttest_ind gives
    welch = difference_of_means([1.0, 2.0, 3.0], [2.0, 3.0, 5.0])
    assert (welch.low, welch.high) == pytest.approx((-4.454217, 1.787551), rel=1e-5)


def test_sensitivity_scales_the_distance_from_the_centre():
    """A band around the theory's value (0.8 < ratio < 1.2 around 1) is varied as a band: its
    half-width is halved and doubled; scaling the bounds themselves would put 1 outside the
    band at ½× (0.4, 0.6) and call a ratio of 0.9998 'fragile'."""
    on_target = effect(0.9997, 0.9999)
    band = [Claim("", rule=Rule("r", ">", 0.8, "s", centre=1.0), effect=on_target),
            Claim("", rule=Rule("r", "<", 1.2, "s", centre=1.0), effect=on_target)]  # fmt: skip
    claim = Claim("c", parts=band)
    assert claim.status == SUPPORTED and claim.sensitivity["fragile"] is False
    assert Rule("r", ">", 0.8, "s", centre=1.0).at(0.5).threshold == pytest.approx(0.9)
    assert Rule("r", ">", 0.8, "s", centre=1.0).at(2.0).threshold == pytest.approx(0.6)
    # a share that must come close to 1: its complement is what is varied
    share = Claim("c", rule=Rule("share", ">", 0.99, "s", centre=1.0), effect=effect(0.993, 0.998))
    assert share.sensitivity == {"0.5x": INCONCLUSIVE, "2x": SUPPORTED, "fragile": True}
    # the default centre 0 scales the threshold itself, as before
    assert Rule("ratio", ">", 10.0, "s").at(0.5).threshold == 5.0
    with pytest.raises(ValueError, match="centre"):
        Rule("r", ">", 1.0, "s", centre=math.nan)
