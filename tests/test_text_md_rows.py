"""text-md's rows: each sparsity measure carries its negative control (ℓ3-MD denser than ℓ2-MD
by the same measure); a part whose interval straddles its threshold says how many paired seeds
would decide it; an accuracy part judged at the equal budget says that the paper's premise
(training to 99.5 % train accuracy) is not met, what it tests instead and what would decide."""

from __future__ import annotations

from dataclasses import asdict

import pytest

import claim_cases_real as real
from attnbias.experiments import text_md
from attnbias.judging.claims import (
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    leaf_reason,
)
from attnbias.judging.register import REGISTER

SPARSITY = ("text-md/sparsity-count", "text-md/sparsity-scale-free")


def sparsity_claims(lo: dict, hi: dict) -> dict:
    """text-md's claims on runs whose ℓ1.1 and ℓ3 arms are shifted from ℓ2 by `lo` and `hi`
    (counts, small, hoyer), every other quantity as claim_cases_real.md_collected(True)."""
    collected = real.md_collected(True)
    for p, shift, seed in ((1.1, lo, 0), (3.0, hi, 40)):
        arm = real.md_arm("x", seed=seed, **shift)
        for m in "KQV":
            for key in ("above_init", "small", "hoyer", "small_0.5x", "small_2x"):
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
    scale_free = claims["text-md/sparsity-scale-free"]
    assert scale_free.status == SUPPORTED
    assert len(scale_free.parts) == 6  # K, Q, V by the near-zero share, then by Hoyer's
    assert all("→ passes" in p.evidence["effect_note"] for p in scale_free.parts)


@pytest.mark.parametrize(
    "at, said",
    [
        ({}, "the same verdict at 95 % alone at ½× and 2× the cut"),
        # at 2× the cut the near-zero share no longer tells ℓ1.1 from ℓ2
        ({2.0: 0.0}, "the verdict at 95 % alone changes at 2× the cut (it rests on our choice"),
        ({0.5: -0.005, 2.0: 0.0}, "changes at 0.5× and 2× the cut"),
    ],
)
def test_the_near_zero_share_is_shown_at_half_and_twice_its_cut(at, said):
    """Referee read 9: the 1 % near-zero cut is ours, so the share is measured at 0.5 % and
    2 % too and each part says whether its verdict (at 95 % alone) changes there; the part's
    verdict is its own cut's either way (evidence, not a second test)."""
    claims = sparsity_claims({**real.SPARSER, "small_at": at}, real.DENSER)
    row = claims["text-md/sparsity-scale-free"]
    assert row.status == SUPPORTED
    for part in row.parts[:3]:  # K, Q, V by the near-zero share
        assert said in part.evidence["effect_note"]
        assert set(part.evidence["near_zero_share_at_other_cuts"]) == {"0.5%", "2.0%"}
    assert all("near_zero_share_at_other_cuts" not in p.evidence for p in row.parts[3:])


def test_one_scale_free_measure_ordering_l11_denser_refutes_the_row_when_its_control_passes():
    """The two scale-free measures judge one row: Hoyer's ordering ℓ1.1 denser refutes it
    although the near-zero share supports it (the parts one family, Holm)."""
    claims = sparsity_claims({**real.SPARSER, "hoyer": -0.02}, real.DENSER)
    row = claims["text-md/sparsity-scale-free"]
    assert row.status == NOT_SUPPORTED
    assert [p.status for p in row.parts] == [SUPPORTED] * 3 + [NOT_SUPPORTED] * 3


def test_the_count_row_is_listed_apart_superseded_by_the_scale_free_row():
    entry = next(e for e in REGISTER if e.id == "text-md/sparsity-count")
    assert entry.superseded_by == "text-md/sparsity-scale-free"


def test_a_straddling_part_says_how_many_seeds_would_decide_it():
    claims = sparsity_claims({**real.SPARSER, "small": 0.0005 + real.straddle(0.005)}, real.DENSER)
    row = claims["text-md/sparsity-scale-free"]
    assert row.status == INCONCLUSIVE
    straddling = [part for part in row.parts if part.status == INCONCLUSIVE]
    assert straddling
    for part in straddling:  # the register's reason, from the stored part (claims.what_decides)
        assert "paired seeds would decide it" in leaf_reason(asdict(part))


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


def test_text_md_rows_are_ours_at_an_equal_budget_not_the_papers_claims():
    """The MD paper's findings hold for models trained to 99.5 % train accuracy; runs stopped
    short of that test our equal-budget reading, never the paper's claim (issue 29)."""
    rows = [entry for entry in REGISTER if entry.id.startswith("text-md/")]
    assert rows
    for entry in rows:
        assert entry.paper == "ours", entry.id
        assert "not the paper's claim" in entry.where or "complement" in entry.where, entry.id
