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
