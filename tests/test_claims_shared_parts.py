"""Review mends of the verdict model: a claim that is also a part of another claim keeps its own
verdict; a ratio past float64's range is inf, not an OverflowError."""

import numpy as np

from attnbias.judging.claims import Claim, Rule, paired_difference, ratio_effect


def part(mean: float, seed: int) -> Claim:
    """A paired difference > 0 over 8 seeds around `mean` (sd 0.05)."""
    values = mean + np.random.default_rng(seed).normal(0.0, 0.05, 8)
    return Claim("", rule=Rule("d", ">", 0.0, "test"), effect=paired_difference(values, 0 * values))


def test_a_claim_listed_as_another_claims_part_keeps_its_own_verdict():
    own = part(-0.06, 0)  # refuted at 95 % alone, not at Holm's level among 41 parts
    assert own.status == "not supported"
    parent = Claim("every setting", parts=[own, *(part(1.0, s) for s in range(1, 41))])
    assert parent.parts[0].status == "inconclusive"  # corrected inside the parent
    assert own.status == "not supported"  # its own row keeps its own verdict


def test_a_ratio_beyond_the_float_range_is_infinite_not_an_error():
    effect = ratio_effect(np.full(5, 1.0), np.array([1e-300, 2e-300, 3e-300, 1e-301, 5e-300]))
    assert effect.estimate > 1e299 and effect.high >= effect.estimate
    wide = effect.at_confidence(1 - 0.05 / 40)  # Holm's levels widen it further
    assert wide is not None and wide.high >= effect.high
