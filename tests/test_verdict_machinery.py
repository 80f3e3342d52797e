"""The verdict machinery around the rules: consistency checks kept apart from paper verdicts."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from attnbias.claims import (
    NOT_SUPPORTED,
    SUPPORTED,
    Claim,
    Effect,
    Rule,
    is_consistency_check,
    paper_verdict,
)


def effect(low, high):
    return Effect((low + high) / 2, low, high, 5, "test")


PAPER = Rule("x", ">", 1.0, "the paper's number")
CHECK = Rule("late slope / η", "<=", 1.0, "triangle inequality", consistency=True)


def test_a_rule_is_a_paper_rule_unless_flagged():
    assert PAPER.consistency is False and CHECK.consistency is True
    with pytest.raises(TypeError, match="consistency"):
        Rule("x", ">", 1.0, "s", consistency="yes")


@pytest.mark.parametrize("low, high", [(0.1, 0.5), (2.0, 3.0)])
def test_a_consistency_check_never_gives_a_paper_verdict(low, high):
    """Whatever its interval, a check's status is about the code: it has no paper verdict,
    alone, as parts, or stored as a dict."""
    alone = Claim("steps have length η", rule=CHECK, effect=effect(low, high))
    other = Claim("b", rule=CHECK, effect=effect(low, high))
    parts = Claim("steps have length η", parts=[alone, other])
    for claim in (alone, parts):
        assert claim.status in (SUPPORTED, NOT_SUPPORTED)
        assert claim.consistency and is_consistency_check(asdict(claim))
        assert paper_verdict(claim) is None and paper_verdict(asdict(claim)) is None
    paper = Claim("p", rule=PAPER, effect=effect(low, high))
    assert not paper.consistency and paper_verdict(paper) == paper.status


def test_a_claim_mixing_paper_rules_and_checks_is_refused():
    with pytest.raises(ValueError, match="mixes consistency"):
        Claim("mixed", parts=[Claim("a", rule=PAPER, effect=effect(2, 3)),
                              Claim("b", rule=CHECK, effect=effect(0, 0.5))])  # fmt: skip
    with pytest.raises(ValueError, match="mixes consistency"):
        Claim("mixed", rule=PAPER, effect=effect(2, 3), parts=[Claim("b", rule=CHECK)])
    # an unmeasured claim is neither
    assert not Claim("n/a", None).consistency


# --- the register: counts from the verdicts, consistency checks apart ----------------------


def mean(values):
    from attnbias.claims import mean_effect

    return mean_effect(values)


def write_summary(root, name, claims, quick=True):
    import json

    summary = {"claims": [asdict(c) for c in claims]}
    if quick:
        summary["scale"] = "quick: a smoke run, not evidence"
    (root / name).mkdir(parents=True)
    (root / name / "summary.json").write_text(json.dumps(summary))


def register_tables(text: str) -> dict[str, list[list[str]]]:
    """The register's tables by section title, each row split into its cells."""
    import re

    tables, section = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:]
        elif line.startswith("| ") and not line.startswith(("| id |", "| --- |")):
            cells = re.split(r"(?<!\\) \| ", line[2:-2])
            tables.setdefault(section, []).append(cells)
    return tables


def tally(cells: list[str], words: list[str]) -> dict[str, int]:
    """How many verdict cells begin with each word (longest word first: "not supported" is not
    "supported"), read from the printed table."""
    found: dict[str, int] = {}
    for text in cells:
        text = text.removeprefix("**")
        word = next(w for w in sorted(words, key=len, reverse=True) if text.startswith(w))
        found[word] = found.get(word, 0) + 1
    return found


def headline(text: str, label: str) -> dict[str, int]:
    line = next(line for line in text.splitlines() if line.startswith(label))
    pairs = line[len(label) :].rstrip(".").split(", ")
    return {p.split(" ", 1)[1]: int(p.split(" ", 1)[0]) for p in pairs}


def test_the_register_headline_counts_the_rows_it_prints(tmp_path):
    """Issue 28: a quick-scale "**not supported** (…) (quick scale: not evidence)" row was
    counted as nothing. The headline is counted from the verdicts the rows print, and
    consistency checks are listed and counted apart."""
    from attnbias.claims import CHECK_WORDS, STATUSES
    from attnbias.experiments.claims_register import NOT_RUN, claims_markdown

    low, high = [0.1, 0.2, 0.15], [3.0, 3.2, 3.1]
    write_summary(tmp_path, "ngd-joint", [
        Claim("a", id="ngd-joint/loss-to-zero", rule=PAPER, effect=mean(high)),
        Claim("b", id="ngd-joint/v-aligns", rule=PAPER, effect=mean(low)),
        Claim("c", id="ngd-joint/W-aligns", rule=PAPER, effect=mean(high), unmet=["stalled"]),
        Claim("d", id="ngd-joint/all-beat-gd", parts=[
            Claim("", rule=PAPER, effect=mean(low)), Claim("", rule=PAPER, effect=mean(high))]),
    ])  # fmt: skip
    write_summary(tmp_path, "ngd-rates", [
        Claim("e", id="ngd-rates/eq12-norm-growth", rule=CHECK, effect=mean(low)),
        Claim("f", id="ngd-rates/eq12-linear-in-lr", rule=CHECK, effect=mean(high)),
    ])  # fmt: skip
    text = claims_markdown(tmp_path, "test")
    tables = register_tables(text)
    paper = tally([row[6] for row in tables["Claims tested here"]], [*STATUSES, NOT_RUN])
    assert paper[NOT_SUPPORTED] == 2 and paper[SUPPORTED] == 1 and paper["inconclusive"] == 1
    assert headline(text, "Verdicts: ") == paper
    checks = tally([row[6] for row in tables["Consistency checks of the code"]],
                   list(CHECK_WORDS.values()))  # fmt: skip
    assert checks == {"check passes": 1, "check fails": 1} == headline(text, "Checks: ")
    # a check's row never carries a paper verdict
    assert all(
        row[0].startswith("ngd-rates/eq12") for row in tables["Consistency checks of the code"]
    )
