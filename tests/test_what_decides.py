"""An interval that straddles its threshold says what would decide it: about how many units,
by a power estimate from the observed spread (claims.units_to_decide, issue 29)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest
from scipy import stats

from attnbias.judging.claims import (
    POWER,
    Claim,
    Rule,
    clustered_proportion_effect,
    leaf_reason,
    mean_effect,
    ratio_effect,
    reasons,
    units_to_decide,
)

ABOVE = Rule("x", ">", 1.0, "ours")


def straddling(values, rule=ABOVE) -> dict:
    claim = Claim("c", rule=rule, effect=mean_effect(values))
    assert claim.status == "inconclusive"
    return asdict(claim)


def sample(n: int, mean: float, sd: float, seed: int = 1) -> np.ndarray:
    """n values with exactly this mean and sample standard deviation."""
    z = np.random.default_rng(seed).standard_normal(n)
    return mean + sd * (z - z.mean()) / z.std(ddof=1)


def test_the_units_asked_for_decide_the_part_as_often_as_the_power_says():
    """Rerun with the units asked for at the observed mean and spread: the 95 % t interval
    clears the threshold in about POWER of the reruns (simulated), and one unit fewer falls
    short of it."""
    leaf = straddling(sample(10, 1.3, 0.6))
    units = units_to_decide(leaf)
    assert units is not None and units > 10
    rng = np.random.default_rng(7)

    def cleared(n: int) -> float:
        draws = rng.normal(1.3, 0.6, size=(4000, n))
        sem = draws.std(axis=1, ddof=1) / np.sqrt(n)
        low = draws.mean(axis=1) - stats.t.ppf(0.975, n - 1) * sem
        return float(np.mean(low > 1.0))

    assert cleared(units) == pytest.approx(POWER, abs=0.03)
    assert cleared(units) >= POWER - 0.03 > cleared(max(2, units // 2))


def test_the_reason_names_the_units_and_how_many_there_are_now():
    leaf = straddling(sample(10, 1.3, 0.6))
    reason = leaf_reason(leaf)
    assert reason.startswith("the 95 % CI straddles 1; about ")
    assert f"about {units_to_decide(leaf):,} seeds would decide it" in reason
    assert "n = 10 now" in reason
    assert reasons(leaf) == [reason]


def test_a_closer_estimate_or_a_wider_spread_asks_for_more_units():
    near, far = straddling(sample(10, 1.1, 0.6)), straddling(sample(10, 1.3, 0.6))
    wide = straddling(sample(10, 1.3, 1.2))
    assert units_to_decide(near) > units_to_decide(far) < units_to_decide(wide)


def test_an_estimate_below_the_threshold_is_decided_the_other_way_alike():
    """The side of the interval facing the threshold sets the spread: mirror images ask for
    the same number."""
    below = straddling(sample(10, 0.7, 0.6))
    above = straddling(sample(10, 1.3, 0.6))
    assert units_to_decide(below) == units_to_decide(above)


def test_a_ratio_is_judged_on_the_log_scale_where_its_interval_was_made():
    logs = sample(9, np.log(1.3), 0.6)
    ratio = Claim("r", rule=Rule("ratio", ">", 1.0, "ours"),
                  effect=ratio_effect(np.exp(logs), np.ones(9)))  # fmt: skip
    on_logs = straddling(logs, Rule("log ratio", ">", 0.0, "ours"))
    assert ratio.status == "inconclusive"
    assert units_to_decide(asdict(ratio)) == units_to_decide(on_logs)


def test_a_stricter_level_asks_for_more_units():
    """Holm's corrected levels: the part must clear a wider interval."""
    leaf = straddling(sample(10, 1.3, 0.6))
    assert units_to_decide(leaf, 0.99) > units_to_decide(leaf)


def test_a_bootstrap_interval_asks_for_more_units_than_it_has():
    holds = np.r_[np.ones(30), np.zeros(4), np.ones(3), np.zeros(1)].astype(bool)
    clusters = np.repeat(np.arange(19), 2)
    effect = clustered_proportion_effect(holds, clusters)
    claim = Claim("share", rule=Rule("share", ">", 0.85, "ours"), effect=effect)
    assert claim.status == "inconclusive", effect
    assert units_to_decide(asdict(claim)) > 19


def test_an_estimate_on_the_threshold_is_decided_by_no_number_of_units():
    leaf = straddling([0.5, 1.5, 1.0])
    assert units_to_decide(leaf) is None
    assert "more seeds alone would not decide it" in leaf_reason(leaf)


def test_the_holm_reason_says_what_reaches_the_corrected_level():
    """A part supported at 95 % alone but not at its Holm level asks for the units that reach
    that level."""
    parts = [Claim(f"p{i}", rule=ABOVE, effect=mean_effect(sample(10, 1.45, 0.6, i)))
             for i in range(4)]  # fmt: skip
    claim = asdict(Claim("all", parts=parts, any_part=True))
    held = [p for p in claim["parts"] if "Holm's correction" in leaf_reason(p)]
    assert held, [leaf_reason(p) for p in claim["parts"]]
    level = held[0]["correction"]["support"]
    assert f"about {units_to_decide(held[0], level):,} seeds would decide it" in leaf_reason(
        held[0]
    )
    assert units_to_decide(held[0], level) > 10
