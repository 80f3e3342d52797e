"""The register's forest plot: each part sits right of 0 exactly when its rule holds across its
whole interval, and every measured part is drawn."""

import math

import numpy as np
import pytest

from attnbias.judging import forest
from attnbias.judging.claims import Rule


@pytest.mark.parametrize("comparison", [">", "<", ">=", "<="])
@pytest.mark.parametrize("threshold", [0.0, 0.05, 1.0, 10.0, -2.0])
def test_a_part_is_right_of_zero_exactly_where_its_rule_holds_at_both_ends(comparison, threshold):
    rule = Rule("q", comparison, threshold, "test")
    rng = np.random.default_rng(abs(hash((comparison, threshold))) % 2**32)
    for _ in range(200):
        low, high = np.sort(threshold + rng.normal(0, 3, 2) * rng.choice([1e-3, 1, 30]))
        estimate = rng.uniform(low, high)
        where = forest.position(
            {"threshold": threshold, "comparison": comparison},
            {"estimate": estimate, "low": low, "high": high},
        )
        x, x_low, x_high, _ = where
        assert x_low <= x <= x_high
        holds = rule.holds(low) and rule.holds(high)
        fails = not rule.holds(low) and not rule.holds(high)
        if holds and low != threshold and high != threshold:
            assert x_low > 0
        if fails and low != threshold and high != threshold:
            assert x_high < 0


def test_a_positive_threshold_is_a_log_ratio_and_a_zero_one_is_scaled():
    log = forest.position({"threshold": 0.05, "comparison": "<"},
                          {"estimate": 0.005, "low": 0.0005, "high": 0.05})  # fmt: skip
    assert log == pytest.approx((1.0, 0.0, 2.0, "log"))  # a decade below 0.05 is +1
    scaled = forest.position({"threshold": 0.0, "comparison": ">"},
                             {"estimate": 2.0, "low": -1.0, "high": 4.0})  # fmt: skip
    assert scaled == pytest.approx((0.5, -0.25, 1.0, "scaled"))
    assert forest.position({"threshold": 1.0, "comparison": ">"},
                           {"estimate": math.nan, "low": 0, "high": 1}) is None  # fmt: skip
    infinite = forest.position({"threshold": 1.0, "comparison": ">"},
                               {"estimate": 2.0, "low": None, "high": math.inf})  # fmt: skip
    assert infinite[:3] == pytest.approx((math.log10(2),) * 3)  # drawn at the estimate


def summary_claims():
    part = {"rule": {"threshold": 1.0, "comparison": ">"}, "status": "supported",
            "effect": {"estimate": 3.0, "low": 2.0, "high": 4.0, "n": 5}}  # fmt: skip
    failing = {**part, "status": "not supported",
               "effect": {"estimate": 0.5, "low": 0.4, "high": 0.6, "n": 5}}  # fmt: skip
    unmeasured = {"rule": part["rule"], "effect": None, "status": "inconclusive"}
    return {
        "md-local": [{"id": "md-local/a", **part},
                     {"id": "md-local/b", "parts": [part, failing, unmeasured]}],
        "atlas": [{"id": "atlas/c", "status": "not applicable", "parts": []}],
    }  # fmt: skip


def test_every_measured_part_is_a_point_with_its_verdict(tmp_path):
    drawn = forest.points(summary_claims())
    assert [(p.label, p.status) for p in drawn] == [
        ("md-local/a", "supported"),
        ("md-local/b #1", "supported"),
        ("md-local/b #2", "not supported"),
    ]  # the unmeasured part and the claim with no parts are not drawn
    assert drawn[2].high < 0 < drawn[1].low
    assert [p.rsplit(".", 1)[1] for p in forest.draw(summary_claims(), tmp_path)] == ["png"]
    paths = forest.draw(summary_claims(), tmp_path, formats=("png", "pdf", "svg"))
    assert sorted(p.rsplit(".", 1)[1] for p in paths) == ["pdf", "png", "svg"]
    assert forest.draw({"x": []}, tmp_path / "none") == []


def test_the_written_register_shows_its_forest_plot(tmp_path):
    from attnbias.judging import register

    path = register.write_claims(tmp_path / "results", tmp_path / "docs" / "CLAIMS.md", "c")
    text = path.read_text()
    if (tmp_path / "docs" / "figures" / "claims_forest.png").exists():
        assert "](figures/claims_forest.png)" in text
    else:  # nothing measured under an empty root: no figure, no image line
        assert "claims_forest" not in text
    found = {"md-local": {"claims": summary_claims()["md-local"]}}
    text = register.register_markdown(found, "c", "figures/claims_forest.png")
    assert text.count("![every measured claim part") == 1


def test_points_are_grouped_by_experiment_and_the_paper_their_entry_cites():
    from attnbias.judging import register

    part = {"rule": {"threshold": 1.0, "comparison": ">"}, "status": "supported",
            "effect": {"estimate": 3.0, "low": 2.0, "high": 4.0, "n": 5}}  # fmt: skip
    found = {
        "ngd-fixed": {"claims": [{**part, "id": "ngd-fixed/ngd-beats-gd"}]},
        "reexamine-polyak": {"claims": [
            {**part, "id": "reexamine-polyak/polyak-faster-cap-1e6"},
            {**part, "id": "reexamine-polyak/ngd-ends-ahead-cap-1e6"}]},
        "vision": {"claims": [{**part, "id": "vision/sngd-slower"}]},
    }  # fmt: skip
    groups = [p.group for p in forest.points(register.forest_claims(found))]
    assert groups == ["ngd-fixed · NGD", "reexamine-polyak · ours", "reexamine-polyak · ours",
                      "vision · NGD"]  # fmt: skip
    assert [p.group for p in forest.points({"x": [{**part, "id": "x/a"}]})] == ["x"]
