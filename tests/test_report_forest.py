"""docs/RESULTS.md shows the forest plot of its own claims, drawn by its generator, so that
regenerating the report keeps it (issue 33)."""

from dataclasses import asdict

import pytest

from attnbias.judging.claims import Claim, Rule, exact_effect
from attnbias.judging.report import RESULTS_FOREST, write_report


def measured(slug, value, effect=True):
    """A claim "value > 1" as a summary stores it (a dict)."""
    rule = Rule("value", ">", 1.0, "test")
    claim = Claim(f"the value {value} exceeds 1", id=f"exp/{slug}", rule=rule,
                  effect=exact_effect(value) if effect else None)  # fmt: skip
    return asdict(claim)


def test_the_report_draws_and_shows_the_forest_plot_of_its_claims(tmp_path):
    summaries = {"exp": {"claims": [measured("above", 3.0), measured("below", 0.1)]}}
    report = tmp_path / "docs" / "RESULTS.md"
    write_report(summaries, {"exp": {}}, report, "attnbias reproduce exp --report R")
    figure = report.parent / "figures" / f"{RESULTS_FOREST}.png"
    assert figure.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    text = report.read_text()
    assert text.count(f"](figures/{RESULTS_FOREST}.png)") == 1
    assert text.index(RESULTS_FOREST) < text.index("## exp")  # above the experiments, at a glance
    drawn = figure.read_bytes()
    write_report(summaries, {"exp": {}}, report, "attnbias reproduce exp --report R")
    assert figure.read_bytes() == drawn  # the same report again: nothing differs, no --force


def test_a_forest_plot_that_differs_is_replaced_only_with_force(tmp_path):
    report = tmp_path / "RESULTS.md"
    (tmp_path / "figures").mkdir()
    mine = tmp_path / "figures" / f"{RESULTS_FOREST}.png"
    mine.write_bytes(b"my own plot")
    summaries = {"exp": {"claims": [measured("above", 3.0)]}}
    with pytest.raises(ValueError, match=f"{RESULTS_FOREST}.png exists and differs"):
        write_report(summaries, {"exp": {}}, report, "attnbias")
    assert mine.read_bytes() == b"my own plot" and not report.exists()
    write_report(summaries, {"exp": {}}, report, "attnbias", force=True)
    assert mine.read_bytes() != b"my own plot"


def test_a_report_without_measured_claims_has_no_forest_plot(tmp_path):
    report = tmp_path / "RESULTS.md"
    unmeasured = measured("unmeasured", 3.0, effect=False)
    write_report({"exp": {"claims": [unmeasured]}}, {"exp": {}}, report, "attnbias")
    assert RESULTS_FOREST not in report.read_text()
    assert not (tmp_path / "figures" / f"{RESULTS_FOREST}.png").exists()
