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
