"""local-gaussian-direction (referee read 12): local convergence judged by direction on fresh
seeds, over runs that travel far beyond their start, so that ending at α′ is not merely not
having left it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import claim_cases
from attnbias.experiments import local_global
from attnbias.store import RunRecord

STEPS = [0, 1, 10, 100, 1000]


def record(p: float, norm: list[float], divergence: list[float]) -> RunRecord:
    label = f"{p:g}"
    rows = [(s, f"norm/{label}", v) for s, v in zip(STEPS, norm)]
    rows += [(s, f"divergence/{label}", v) for s, v in zip(STEPS, divergence)]
    steps, metric, value = zip(*rows)
    table = pa.table({"step": list(steps), "metric": list(metric), "value": list(value)})
    return RunRecord("k", {"norms": [p]}, table, {}, {})


def test_travel_is_measured_in_the_mirror_map_s_space():
    """ℓ3: ‖∇ψ(W)‖ = ‖W‖₃², so a tenfold ‖W‖₃ is a hundredfold travel; NGD's is ‖W‖_F's."""
    falling = [0.0, 0.3, 0.2, 0.1, 0.01]
    assert local_global.direction_measures(record(3.0, [10, 11, 20, 50, 100], falling))[
        "travel"
    ] == pytest.approx(100.0)
    assert local_global.direction_measures(record(2.0, [10, 11, 20, 50, 100], falling))[
        "travel"
    ] == pytest.approx(10.0)


def test_still_falling_compares_the_end_with_a_tenth_of_the_run():
    """The reference is the last recorded step at or before a tenth (step 100 of 1,000): a
    divergence below it there is still closing on W_mm(α′); equal or above is not, whatever
    it did before."""
    norm = [10, 11, 20, 50, 100]
    measured = local_global.direction_measures(record(2.0, norm, [0.0, 0.3, 0.2, 0.1, 0.01]))
    assert measured["falling"] and measured["final_divergence"] == 0.01
    flat = local_global.direction_measures(record(2.0, norm, [0.0, 0.3, 0.2, 0.1, 0.1]))
    assert not flat["falling"]
    # below step 10's value but not step 100's: the reference is step 100, not earlier
    late_rise = local_global.direction_measures(record(2.0, norm, [0.0, 0.3, 0.2, 0.01, 0.05]))
    assert not late_rise["falling"]


def direction(rows_change=None):
    rows, dominance, config = claim_cases.local_global_inputs()
    for r in rows:
        if r["direction"] and rows_change:
            rows_change(r)
    made = {c.id: c for c in local_global.claims(rows, dominance, config)}
    return made["local-global/local-gaussian-direction"]


def test_supported_where_every_algorithm_s_starts_stay_and_keep_closing():
    def stay(r):
        r["outcome"], r["falling"], r["travel"] = "start", True, 20.0

    claim = direction(stay)
    assert claim.status == "supported"
    assert [p.status for p in claim.parts] == ["supported", "supported"]
    assert claim.parts[0].parts[0].effect.n == 100  # seeds, not starts


def test_a_share_below_the_level_at_every_radius_is_inconclusive_not_refuted():
    """ℓ3-MD's starts leave α′ or stop closing on half the seeds: refuted at its radius, but
    'for R large enough' gives no R₀, so the algorithm's claim is inconclusive and says so."""
    claim = direction()
    ngd, md = claim.parts
    assert ngd.status == "supported"
    assert md.parts[0].status == "not supported" and md.status == "inconclusive"
    assert any("R₀ (not given) lies beyond them" in why for why in md.unmet)
    assert claim.status == "inconclusive"


def test_staying_at_alpha_without_closing_on_its_svm_does_not_count():
    def settled(r):
        r["outcome"], r["falling"], r["travel"] = "start", False, 20.0

    claim = direction(settled)
    assert all(p.parts[0].status == "not supported" for p in claim.parts)


def test_runs_that_did_not_travel_far_leave_it_inconclusive_where_they_could_decide():
    """NGD's starts all pass and one seed's run is short of the travel: counted as failing it
    could take the share below the level, so that part is inconclusive and says why."""

    def short(r):
        r["outcome"], r["falling"] = "start", True
        r["travel"] = 3.0 if r["seed"] <= 130 else 20.0  # 10 of 100 seeds

    claim = direction(short)
    ngd = claim.parts[0].parts[0]
    assert ngd.status == "inconclusive"
    assert any("travel less than 10× their start" in why for why in ngd.unmet)
    assert np.isclose(ngd.evidence["least_travel"], 3.0)


def test_a_short_run_that_cannot_change_the_verdict_is_only_noted():
    """One short run (seed 121) in each part: counted either way, NGD's 100 seeds stay above
    the level and ℓ3-MD's half below it; each part says so and keeps its verdict."""
    ngd, md = (p.parts[0] for p in direction().parts)
    assert ngd.status == "supported" and md.status == "not supported"
    assert not ngd.unmet and not md.unmet
    assert all("the verdict is the same" in p.evidence["short_of_travel"] for p in (ngd, md))
