"""The register's counted verdicts are split by whose claim a row judges: the papers' own
statements and our readings (rows marked "ours"), whose refutations say nothing about the
papers (referee read 8)."""

from __future__ import annotations

from attnbias.judging.claims import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from attnbias.judging.register import Row, by_source


def row(verdict: str, paper: str) -> Row:
    return Row(("x",), verdict, paper=paper)


def test_the_split_counts_each_row_once_under_whose_claim_it_is():
    rows = [row(SUPPORTED, "NGD"), row(NOT_SUPPORTED, "ours"), row(NOT_SUPPORTED, "MD"),
            row(INCONCLUSIVE, "ours"), row(SUPPORTED, "ours")]  # fmt: skip
    (line, blank) = by_source(rows)
    papers, ours = line.split("; our readings")
    assert "1 supported, 1 not supported" in papers and "inconclusive" not in papers
    assert "1 supported, 1 not supported, 1 inconclusive" in ours
    assert blank == ""


def test_no_split_where_every_row_is_of_one_kind():
    assert by_source([row(SUPPORTED, "NGD"), row(NOT_SUPPORTED, "MD")]) == []
    assert by_source([row(SUPPORTED, "ours")]) == []


def test_decided_verdicts_that_rest_on_their_threshold_are_named_apart():
    """Referee read 9: vision/adam-little-mnist was fragile (½×: not supported, 2×:
    inconclusive) yet counted among the refutations without a word. Fragile decided verdicts
    stay counted (the rule came before the data) and are named in a line of their own; a
    fragile inconclusive row, or a robust decided one, is not in it."""
    from dataclasses import replace

    from attnbias.judging.register import fragile_decided

    rows = [replace(row(NOT_SUPPORTED, "NGD"), cells=("vision/adam-little-mnist",), fragile=True),
            replace(row(SUPPORTED, "ours"), cells=("a/b",), fragile=True),
            replace(row(INCONCLUSIVE, "NGD"), cells=("c/d",), fragile=True),
            replace(row(SUPPORTED, "MD"), cells=("e/f",))]  # fmt: skip
    (line, blank) = fragile_decided(rows)
    assert line.startswith("Of the decided verdicts, 2 rest on the threshold")
    assert "1 supported, 1 not supported (vision/adam-little-mnist, a/b)" in line
    assert "c/d" not in line and "e/f" not in line and blank == ""
    assert fragile_decided(rows[2:]) == []
