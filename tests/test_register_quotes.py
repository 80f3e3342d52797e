"""Attribution (issue 29 class 9): every quote the register marks verbatim is in the seed texts,
and every statement the seed texts do not hold says where it was read.

The seed texts are not in the repository: tests/seed_quotes.py finds the quotes in them and
records where in tests/data/seed_quotes.json, which these tests check the register against.
"""

from __future__ import annotations

import json

import pytest

import seed_quotes
from attnbias.judging import papers, register
from attnbias.judging.register import REGISTER, UNTESTED, PaperClaim

ENTRIES = [*REGISTER, *UNTESTED]


def vendored() -> dict:
    return json.loads(seed_quotes.VENDORED.read_text(encoding="utf-8"))["quotes"]


def test_every_quote_marked_verbatim_was_found_in_the_seed_texts():
    wanted, found = seed_quotes.verbatim_quotes(ENTRIES), vendored()
    missing = [f"{who}: '{q}'" for q, who in wanted.items() if q not in found]
    assert not missing, (
        "quotes marked verbatim that were not found in the seed texts (run "
        "`python tests/seed_quotes.py SEEDS_DIR`, or mark the entry verbatim=False with "
        "read_in naming where the quote was read):\n" + "\n".join(missing)
    )
    assert set(found) == set(wanted), "quotes the register no longer makes: rerun seed_quotes"


def test_a_quote_edited_or_not_in_the_seed_texts_is_caught():
    """What the check above would report, on entries made up for the purpose."""
    edited = PaperClaim("x/edited", "NGD", "§3", "'NGD is significantly slower than standard GD'")
    assert seed_quotes.verbatim_quotes([edited]).keys() - vendored().keys()
    elsewhere = PaperClaim("x/read", "MD", "§5", "'a quote of the body'", verbatim=False,
                           read_in=papers.READ_MD)  # fmt: skip
    assert seed_quotes.verbatim_quotes([elsewhere]) == {}
    with pytest.raises(ValueError, match="read_in"):
        PaperClaim("x/unsourced", "MD", "§5", "'a quote of the body'", verbatim=False)


def test_locating_quotes_in_seed_texts():
    seeds = {"a.txt": "We show that MD converges in direction to $\\ell_p$-SVM, the solution.",
             "b.txt": "GD's iterates: rates are much faster in the beginning [12]."}  # fmt: skip
    quoted = [
        ("x/1", "converges, in direction, to [W_mm] ℓp-SVM"),
        ("x/2", "are much faster in the beginning"),
        ("x/3", "converges in direction to the solution"),
        ("x/4", "much fast"),
    ]
    wanted = {seed_quotes.normalised(q, quote=True): who for who, q in quoted}
    found, missing = seed_quotes.locate(wanted, seeds)
    assert found == {
        "converges in direction to lp svm": {"seed": "a.txt", "word": 4},
        "are much faster in the beginning": {"seed": "b.txt", "word": 4},
    }
    assert missing == ["x/3: 'converges in direction to the solution'", "x/4: 'much fast'"]


@pytest.mark.parametrize(
    "text, quotes",
    [("'a b' (abstract): the paper's c", ["a b"]), ("'x' and 'y's z'", ["x", "y's z"]),
     ("§3 'Extension to Polyak', Fig. 2", ["Extension to Polyak"]), ("Muon's rate", [])],
)  # fmt: skip
def test_a_quote_is_what_single_quotes_enclose_outside_a_word(text, quotes):
    assert seed_quotes.QUOTE.findall(text) == quotes


def test_a_statement_the_seed_texts_do_not_hold_says_where_it_was_read():
    """The seed texts hold the NGD paper whole and the MD paper's abstract only: a row citing
    the MD paper beyond its abstract, or the SVM paper, prints where it was read."""
    for entry in ENTRIES:
        who = getattr(entry, "id", entry.where)
        if entry.paper == "SVM" or "SVM paper" in entry.where:
            assert papers.READ_SVM in entry.read_in, who
        if entry.paper == "MD" and entry.where != "abstract":
            assert papers.READ_MD in entry.read_in, who
        if entry.paper == "ours":
            assert not seed_quotes.quotes(entry), f"{who}: a quote in a statement of ours"
    text = register.register_markdown({}, "test")
    for entry in ENTRIES:
        cited = register.where_read(entry.where, entry.read_in)
        assert register.cell(cited) in text, cited
    rows = {row.cells[0]: row.cells[1] for row in register.register_rows({})}
    # our extension of the SVM paper's result (issue 29), saying where that was read
    assert rows["kq-nuclear/kq-nuclear-svm"] == (f"ours, {register.KQ_WHERE} ({papers.READ_SVM})")
    assert rows["ngd-fixed/ngd-beats-gd"] == "NGD, §3 (Q3), Fig. 2"
