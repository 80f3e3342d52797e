"""docs/REFEREE.md's mechanical questions, asked of every constructed claim: the rule cases of
tests/claim_cases.py and the experiments' own claims() on their constructed inputs.

(a) every part that is not supported prints its verdict on its own line, and why when it is
inconclusive; (b) n is the number of distinct seeds a part's evidence names; (c) a register row
is listed as a consistency check exactly when its claim rests only on consistency checks.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict

import pytest

from attnbias.judging.claims import (
    INCONCLUSIVE,
    SUPPORTED,
    is_consistency_check,
    measured_parts,
    reasons,
    status_of,
    verdict_columns,
    verdict_text,
)
from attnbias.judging.register import REGISTER, matching
from claim_cases import cases
from test_verdict_machinery import replication_errors


def rule_claims() -> list[dict]:
    made = []
    for name, listed in cases().items():
        module, attr = name.split(".")
        fn = getattr(importlib.import_module(f"attnbias.judging.verdicts.{module}"), attr)
        made += [asdict(fn(*args, **kwargs)) for _, args, kwargs in listed]
    return made


def experiment_claims() -> list[dict]:
    from test_claims import CLAIMS, synthetic_claims
    from test_reexamine_claims import reexamine_claims

    made = [c for listed in synthetic_claims().values() for c in listed]
    made += [c for make in CLAIMS.values() for holds in (True, False) for c in make(holds=holds)]
    made += reexamine_claims()
    return [asdict(c) for c in made]


@pytest.fixture(scope="module")
def constructed() -> dict[str, list[dict]]:
    return {"rules": rule_claims(), "experiments": experiment_claims()}


def unprinted_reasons(claim: dict) -> list[str]:
    """What the register's row of `claim` fails to print: an inconclusive verdict without its
    reasons; a part not supported without its own verdict on its line of the effect column; an
    inconclusive part without its reason there (or, alone, in the verdict column)."""
    columns, leaves = verdict_columns(claim), measured_parts(claim)
    missing = []
    if status_of(claim) == INCONCLUSIVE:
        why = reasons(claim)
        if not why or any(r not in columns["verdict"] for r in why):
            missing.append(f"verdict {columns['verdict']!r} without its reasons {why}")
    lines = columns["effect"].split("<br>")
    for k, leaf in enumerate(leaves):
        if status_of(leaf) == SUPPORTED:
            continue
        said = lines[k] if len(leaves) > 1 else columns["verdict"]
        if verdict_text(leaf) not in said:
            missing.append(f"part {k} ({verdict_text(leaf)}) not printed: {said!r}")
        if status_of(leaf) == INCONCLUSIVE and not reasons(leaf):
            missing.append(f"part {k} inconclusive without a reason")
    return missing


@pytest.mark.parametrize("kind", ["rules", "experiments"])
def test_every_part_not_supported_prints_its_verdict_and_why(constructed, kind):
    failures = {
        claim.get("id") or claim["claim"]: missing
        for claim in constructed[kind]
        if (missing := unprinted_reasons(claim))
    }
    assert not failures, failures


def test_a_verdict_printed_without_its_reason_is_caught():
    """The check above, on stored claims: one that prints its parts' reasons, and the same
    claim inconclusive with every part supported, which has no reason to print."""
    from test_verdict_machinery import reasoned_claim

    claim = asdict(reasoned_claim())
    assert unprinted_reasons(claim) == []
    parts = [{**part, "status": SUPPORTED, "unmet": []} for part in claim["parts"]]
    assert unprinted_reasons({**claim, "parts": parts}) == [
        "verdict 'inconclusive' without its reasons []"
    ]


def test_every_constructed_n_counts_the_distinct_seeds_its_evidence_names(constructed):
    for kind, made in constructed.items():
        assert replication_errors({"claims": made}, seeds=10**6) == [], kind


def test_a_register_row_is_a_consistency_check_exactly_when_its_claim_is(constructed):
    """A rule flagged as a consistency check never gives a paper verdict (tests of
    claims.paper_verdict); here: the register lists a claim among the checks exactly when its
    entry says so and its rules are all checks, so that no row is counted as the wrong kind."""
    found = {}
    for claim in constructed["experiments"]:
        found.setdefault(claim["id"].split("/", 1)[0], {"claims": []})["claims"].append(claim)
    compared = 0
    for entry in REGISTER:
        for claim in matching(entry, found.get(entry.experiment)):
            if measured_parts(claim):
                compared += 1
                assert entry.consistency == is_consistency_check(claim), claim["id"]
    assert compared > 50, f"only {compared} register rows had a constructed claim"
