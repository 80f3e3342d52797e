"""text-md's rows: each sparsity measure carries its negative control (ℓ3-MD denser than ℓ2-MD
by the same measure); a part whose interval straddles its threshold says how many paired seeds
would decide it; an accuracy part judged at the equal budget says that the paper's premise
(training to 99.5 % train accuracy) is not met, what it tests instead and what would decide."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import claim_cases_real as real
from attnbias.experiments import text_md
from attnbias.judging.claims import (
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    Effect,
    paired_difference,
    units_to_decide,
)
from attnbias.judging.register import REGISTER

SPARSITY = ("text-md/sparsity-count", "text-md/sparsity-scale-free", "text-md/sparsity-hoyer")


def t_interval_excludes(mean: float, sd: float, n: int, threshold: float) -> bool:
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return abs(mean - threshold) > half


@pytest.mark.parametrize(("mean", "sd", "n"), [(0.3, 1.0, 11), (0.05, 0.2, 5), (-2.0, 9.0, 8)])
def test_units_to_decide_is_the_smallest_n_whose_t_interval_excludes_the_threshold(mean, sd, n):
    rng = np.random.default_rng(3)
    raw = rng.standard_normal(n)
    values = mean + sd * (raw - raw.mean()) / raw.std(ddof=1)  # exactly this mean and sd
    needed = units_to_decide(paired_difference(values, np.zeros(n)), 0.0)
    assert needed is not None and needed >= 2
    assert t_interval_excludes(mean, sd, needed, 0.0)
    assert needed == 2 or not t_interval_excludes(mean, sd, needed - 1, 0.0)


def test_units_to_decide_has_no_answer_without_a_t_interval_or_a_gap():
    assert units_to_decide(Effect(0.0, -1.0, 1.0, 9, "paired t interval"), 0.0) is None
    assert units_to_decide(Effect(0.5, -1.0, 2.0, 9, "bootstrap"), 0.0) is None
    assert units_to_decide(Effect(0.5, -math.inf, math.inf, 1, "one unit: no interval"), 0) is None
    assert units_to_decide(Effect(1e-9, -1.0, 1.0, 9, "paired t interval"), 0.0) is None


def sparsity_claims(lo: dict, hi: dict) -> dict:
    """text-md's claims on runs whose ℓ1.1 and ℓ3 arms are shifted from ℓ2 by `lo` and `hi`
    (counts, small, hoyer), every other quantity as claim_cases_real.md_collected(True)."""
    collected = real.md_collected(True)
    for p, shift, seed in ((1.1, lo, 0), (3.0, hi, 40)):
        arm = real.md_arm("x", seed=seed, **shift)
        for m in "KQV":
            for key in ("above_init", "small", "hoyer"):
                collected[p]["values"][f"{key}_{m}"] = arm.values[f"{key}_{m}"]
    return {c.id: c for c in text_md.text_md_claims(collected)}


def test_a_measure_that_fails_its_negative_control_decides_nothing():
    """ℓ1.1 has fewer large entries than ℓ2, but so has ℓ3, which should be the densest: the
    count measures something else (how far weights moved), so its row is inconclusive and
    says why; measures that order ℓ3 denser still judge the claim."""
    claims = sparsity_claims(real.SPARSER, {**real.DENSER, "counts": -800.0})
    count = claims["text-md/sparsity-count"]
    assert count.status == INCONCLUSIVE
    assert all(p.effect.estimate < 0 and p.effect.high < 0 for p in count.parts)
    assert all("negative control fails" in p.unmet[0] for p in count.parts)
    assert all(p.evidence["effect_note"].endswith("→ fails") for p in count.parts)
    assert claims["text-md/sparsity-hoyer"].status == SUPPORTED
    assert claims["text-md/sparsity-scale-free"].status == SUPPORTED
    assert all(p.evidence["effect_note"].endswith("→ passes")
               for p in claims["text-md/sparsity-hoyer"].parts)  # fmt: skip


def test_a_measure_ordering_l11_denser_is_refuted_when_its_control_passes():
    claims = sparsity_claims({**real.SPARSER, "hoyer": -0.02}, real.DENSER)
    assert claims["text-md/sparsity-hoyer"].status == NOT_SUPPORTED


def test_a_straddling_part_says_how_many_seeds_would_decide_it():
    claims = sparsity_claims({**real.SPARSER, "small": 0.0005 + real.straddle(0.005)}, real.DENSER)
    row = claims["text-md/sparsity-scale-free"]
    assert row.status == INCONCLUSIVE
    for part in row.parts:
        note = part.evidence["effect_note"]
        assert ("paired seeds would decide this part" in note) == (part.status == INCONCLUSIVE)
    decided = claims["text-md/sparsity-hoyer"].parts
    assert all("would decide" not in p.evidence["effect_note"] for p in decided)


def test_every_sparsity_claim_is_in_the_register():
    assert set(SPARSITY) <= {entry.id for entry in REGISTER}
    assert set(SPARSITY) <= {f"text-md/{slug}" for slug in text_md.TEXT_MD_CLAIMS}


@pytest.mark.parametrize("protocol", ["budget", "target"])
def test_an_accuracy_row_at_the_equal_budget_says_the_papers_premise_is_not_met(protocol):
    """Under the equal budget no run is trained to the paper's 99.5 %: each accuracy part says
    so beside its effect, with the train accuracy its arms reached, what it tests instead and
    what would decide the paper's claim; under the paper's stopping rule it says nothing."""
    collected = real.md_collected(True)
    for arm in collected.values():
        arm["values"]["half_test_accuracy"] = arm["values"]["test_accuracy"]
    claims = {c.id: c for c in text_md.text_md_claims(collected, protocol)}
    parts = [claims["text-md/best-accuracy"], *claims["text-md/md-beats-gd"].parts]
    for part in parts:
        note = part.evidence.get("effect_note", "")
        assert ("premise is not met" in note) == (protocol == "budget")
    if protocol == "budget":
        note = parts[0].evidence["effect_note"]
        assert "99.5 % train accuracy" in note and "ℓ1.1-MD 71.0 %, ℓ2-MD 71.0 %" in note
        assert "--paper --device cuda" in note
