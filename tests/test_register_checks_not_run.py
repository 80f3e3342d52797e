"""A consistency check that has not been run is counted among the checks, never among the
paper verdicts of the register's headline."""

from attnbias.judging import register as register


def test_unrun_consistency_checks_are_counted_apart():
    rows = register.register_rows({})  # nothing run: every row is "not run yet"
    checks = [r for r in rows if r.consistency]
    ids = {r.cells[0] for r in checks}
    assert ids == {e.id for e in register.REGISTER if e.consistency}
    assert {"ngd-rates/eq12-upper-bound", "ngd-rates/lemma1-vs-margin"} <= ids
    paper = [r for r in rows if not r.consistency]
    assert register.counts(paper) == f"{len(paper)} {register.NOT_RUN_WORDS}"
    assert register.counts(checks) == f"{len(checks)} {register.NOT_RUN_WORDS}"
    text = register.register_markdown({}, "attnbias claims")
    assert f"Verdicts: {len(paper)} {register.NOT_RUN_WORDS}." in text
