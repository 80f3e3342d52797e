"""Issue 29 (referee, point 11): one piece of evidence is one counted row. Two rows may report
the same runs (e.g. the atlas's and reexamine-muon's own-norm gap at one step), as do
ngd-fixed/polyak-faster and reexamine-polyak's uncapped row (the same confirmation runs). The
register counts the first and points to it from the other."""

from __future__ import annotations

import numpy as np

from attnbias.judging.claims import Claim, Rule, exact_effect, mean_effect
from attnbias.judging.register import (
    NOT_RUN_WORDS,
    REGISTER,
    evidence_key,
    register_markdown,
    register_rows,
)
from test_verdict_machinery import headline, stored

RULE = Rule("final gap, mean over seeds", "<", 0.05, "ours")


def muon_claim(experiment: str, values) -> Claim:
    """The own-norm gap row of the atlas and of reexamine-muon (neither superseded)."""
    return Claim("the own-norm gap goes to near 0", id=f"{experiment}/own-norm-gap", rule=RULE,
                 effect=mean_effect(values))  # fmt: skip


def summaries(atlas_values, reexamine_values) -> dict:
    return {
        "atlas": stored([muon_claim("atlas", atlas_values)], quick=False),
        "reexamine-muon": stored([muon_claim("reexamine-muon", reexamine_values)], quick=False),
    }


def test_two_counted_rows_never_carry_the_same_evidence():
    """The same runs in two experiments (identical estimate, interval and n): counted once, the
    later row pointing to the earlier; the headline counts one verdict, and says so."""
    values = np.array([0.3, 0.4, 0.35, 0.45])
    rows = register_rows(summaries(values, values))
    measured = [r for r in rows if r.cells[0].endswith("/own-norm-gap")]
    measured = [r for r in measured if r.verdict != NOT_RUN_WORDS]
    assert [r.cells[0] for r in measured] == ["atlas/own-norm-gap", "reexamine-muon/own-norm-gap"]
    assert [r.same_as for r in measured] == ["", "atlas/own-norm-gap"]
    keys = [evidence_key(c) for s in summaries(values, values).values() for c in s["claims"]]
    assert keys[0] == keys[1] is not None
    counted_keys = [r.cells[5] for r in rows if not r.same_as and not r.consistency
                    and r.verdict != NOT_RUN_WORDS]  # fmt: skip
    assert len(counted_keys) == len(set(counted_keys)), counted_keys
    text = register_markdown(summaries(values, values), "test")
    assert headline(text, "Verdicts: ")["not supported"] == 1
    assert "Not counted: 1 row repeats another row's evidence" in text
    assert "| see atlas/own-norm-gap |" in text


def test_different_evidence_is_counted_twice():
    rows = register_rows(summaries(np.array([0.3, 0.4, 0.35]), np.array([0.3, 0.4, 0.36])))
    assert not any(r.same_as for r in rows)
    text = register_markdown(summaries(np.array([0.3, 0.4, 0.35]), np.array([0.3, 0.4, 0.36])), "t")
    assert headline(text, "Verdicts: ")["not supported"] == 2
    assert "Not counted" not in text


def test_equal_exact_values_are_not_taken_for_the_same_runs():
    """Two lemmas with no violation in the same number of cases, or two deterministic runs
    ending at 1: equal numbers by chance, not one piece of evidence."""
    one = Claim("c", rule=RULE, effect=exact_effect(0.0))
    assert evidence_key(stored([one])["claims"][0]) is None
    spread = Claim("c", rule=RULE, effect=mean_effect([0.1, 0.2, 0.3]))
    assert evidence_key(stored([spread])["claims"][0]) is not None


def test_the_tally_of_reproduce_counts_repeated_evidence_once():
    from attnbias.cli_tally import tallies, tally_lines

    values = np.array([0.3, 0.4, 0.35, 0.45])
    found = tallies(summaries(values, values))
    assert found["atlas"].verdicts["not supported"] == 1
    assert found["reexamine-muon"].verdicts["not supported"] == 0
    lines = tally_lines(summaries(values, values))
    assert any("reexamine-muon/own-norm-gap (see atlas/own-norm-gap)" in line for line in lines)


def adam_summaries(with_later: bool) -> dict:
    """atlas's Adam-decay row (inconclusive: 3,000 steps) and, if `with_later`,
    reexamine-adam's row on the same arm run longer (supported): other evidence."""

    def adam(experiment: str, values) -> Claim:
        return Claim("Adam-decay behaves like SignGD", id=f"{experiment}/adam-decay-like-signgd",
                     rule=RULE, effect=mean_effect(values))  # fmt: skip

    found = {"atlas": stored([adam("atlas", [0.01, 0.09, 0.05, 0.07])], quick=False)}
    if with_later:
        found["reexamine-adam"] = stored([adam("reexamine-adam", [0.01, 0.02, 0.015])],
                                         quick=False)  # fmt: skip
    return found


def test_a_superseded_row_points_to_the_row_that_decides_it_and_is_not_counted():
    """atlas/adam-decay-like-signgd is decided by reexamine-adam's longer runs: where that row
    has a verdict, the atlas row is listed apart, pointing to it, and not counted."""
    rows = register_rows(adam_summaries(with_later=True))
    atlas = next(r for r in rows if r.cells[0] == "atlas/adam-decay-like-signgd")
    assert atlas.superseded_by == "reexamine-adam/adam-decay-like-signgd" and not atlas.same_as
    text = register_markdown(adam_summaries(with_later=True), "test")
    counts = headline(text, "Verdicts: ")
    assert counts.get("supported") == 1 and "inconclusive" not in counts, counts
    assert "Not counted either: 1 row is superseded by a later row" in text
    assert "## Rows superseded by another row" in text
    assert "inconclusive (the 95 % CI straddles 0.05" in text.split("## Rows superseded")[1]
    assert "superseded by reexamine-adam/adam-decay-like-signgd |" in text


def test_a_row_whose_superseding_row_has_no_verdict_is_counted():
    rows = register_rows(adam_summaries(with_later=False))
    atlas = next(r for r in rows if r.cells[0] == "atlas/adam-decay-like-signgd")
    assert not atlas.superseded_by
    text = register_markdown(adam_summaries(with_later=False), "test")
    assert headline(text, "Verdicts: ")["inconclusive"] == 1
    assert "superseded by another row" not in text


def test_the_tally_of_reproduce_counts_a_superseded_claim_where_it_is_decided():
    from attnbias.cli_tally import tallies, tally_lines

    found = tallies(adam_summaries(with_later=True))
    assert found["atlas"].verdicts["inconclusive"] == 0
    assert found["reexamine-adam"].verdicts["supported"] == 1
    lines = tally_lines(adam_summaries(with_later=True))
    assert any("superseded by a later claim" in line and "atlas/adam-decay-like-signgd (see "
               "reexamine-adam/adam-decay-like-signgd)" in line for line in lines)  # fmt: skip


def test_the_atlas_muon_row_is_not_superseded_by_a_row_at_another_step():
    """A row is superseded only by one that decides its claim in the same setting (the same arm
    run longer, docs/REFEREE.md): reexamine-muon judges Muon at another step (issue 29)."""
    entry = next(e for e in REGISTER if e.id == "atlas/muon-like-spectraldescent")
    assert not entry.superseded_by


def test_reexamine_muons_3000_step_row_is_superseded_by_the_same_arm_run_longer():
    """Issue 29: torch's Muon at its tuned η had not converged in 3,000 steps; Muon-long, the
    same arm at the same η over 10× the steps, decides the claim: where it has a verdict the
    3,000-step row is listed apart, pointing to it, and not counted."""
    short, long = (f"reexamine-muon/{s}-like-spectraldescent" for s in ("muon", "muon-long"))
    entry = next(e for e in REGISTER if e.id == short)
    assert entry.superseded_by == long and any(e.id == long for e in REGISTER)
    made = [
        Claim("Muon behaves like SpectralDescent", id=i, rule=RULE, effect=mean_effect(v))
        for i, v in ((short, [0.01, 0.09, 0.05, 0.07]), (long, [0.01, 0.02, 0.015]))
    ]
    rows = register_rows({"reexamine-muon": stored(made, quick=False)})
    assert next(r for r in rows if r.cells[0] == short).superseded_by == long
    assert not next(r for r in rows if r.cells[0] == long).superseded_by


def text_md_summary(accuracy_parts: int, beats_parts: int) -> dict:
    """text-md's best-accuracy and md-beats-gd rows, made of the first `accuracy_parts` and
    `beats_parts` of the same two paired comparisons (one run's numbers)."""
    comparisons = [
        Claim("", rule=Rule("ℓ1.1 − ℓ2, paired by seed", ">", 0.0, "the paper"),
              effect=mean_effect([1.0, 2.0, 0.5, 1.5])),
        Claim("", rule=Rule("ℓ3 − ℓ2, paired by seed", ">", 0.0, "the paper"),
              effect=mean_effect([-2.0, -1.5, -2.5, -1.0])),
    ]  # fmt: skip
    rows = [Claim("best", id="text-md/best-accuracy", parts=comparisons[:accuracy_parts]),
            Claim("beats", id="text-md/md-beats-gd", parts=comparisons[:beats_parts])]  # fmt: skip
    return {"text-md": stored(rows, quick=False)}


def test_a_row_whose_parts_are_all_another_rows_repeats_it_in_either_order():
    """Issue 29 (referee): text-md/best-accuracy's one part is md-beats-gd's first: one result,
    counted once, in the row that reports it in full, whichever row comes first."""
    for accuracy_parts, beats_parts, repeats, full in (
        (1, 2, "text-md/best-accuracy", "text-md/md-beats-gd"),
        (2, 1, "text-md/md-beats-gd", "text-md/best-accuracy"),
    ):
        rows = {r.cells[0]: r for r in register_rows(text_md_summary(accuracy_parts, beats_parts))}
        assert rows[repeats].same_as == full and rows[full].same_as == ""
        text = register_markdown(text_md_summary(accuracy_parts, beats_parts), "test")
        assert f"| see {full} |" in text
        assert "Not counted: 1 row repeats another row's evidence" in text


def test_rows_sharing_only_some_parts_are_both_counted():
    one = text_md_summary(2, 2)
    one["text-md"]["claims"][0]["parts"][1]["effect"]["estimate"] = -1.9  # another run's number
    assert not any(r.same_as for r in register_rows(one))


def test_parts_are_counted_with_their_multiplicity():
    """A row of two parts with equal numbers (two arms that both end at every start's success)
    is not the one-part row that shares one of them: the one-part row repeats it, not back."""
    found = text_md_summary(1, 2)
    beats = found["text-md"]["claims"][1]
    beats["parts"][1] = beats["parts"][0]
    rows = {r.cells[0]: r for r in register_rows(found)}
    assert rows["text-md/best-accuracy"].same_as == "text-md/md-beats-gd"
    assert rows["text-md/md-beats-gd"].same_as == ""


def test_a_summary_row_made_of_other_rows_parts_repeats_them_and_they_are_counted():
    """A row whose parts are all the parts of rows lying wholly within it (reexamine-adam's
    constant-rate-explains: adam-decay-like-signgd's parts and adam-decay-closer's) summarises
    them: it is the one not counted, naming them, and each of them is counted; a row that only
    shares one part with a larger one (text-md/best-accuracy) still repeats the larger one."""
    like = [Claim("", rule=RULE, effect=mean_effect([0.01, 0.02, 0.015])),
            Claim("", rule=RULE, effect=mean_effect([0.02, 0.03, 0.025]))]  # fmt: skip
    closer = [Claim("", rule=Rule("ratio, paired", ">", 1.0, "ours"),
                    effect=mean_effect([0.5, 0.6, 0.55]))]  # fmt: skip
    rows = ("adam-decay-like-signgd", "adam-decay-closer-than-adam-eps0", "constant-rate-explains")
    ids = tuple(f"reexamine-adam/{row}" for row in rows)
    made = [Claim("like", id=ids[0], parts=like), Claim("closer", id=ids[1], parts=closer),
            Claim("explains", id=ids[2], parts=[*like, *closer])]  # fmt: skip
    rows = {r.cells[0]: r for r in register_rows({"reexamine-adam": stored(made, quick=False)})}
    assert rows[ids[2]].same_as == f"{ids[0]}, {ids[1]}"
    assert rows[ids[0]].same_as == "" and rows[ids[1]].same_as == ""
    # without the closer row the explains row is not a summary: the like row repeats it
    rows = {r.cells[0]: r for r in register_rows({"reexamine-adam": stored(
        [made[0], made[2]], quick=False)})}  # fmt: skip
    assert rows[ids[0]].same_as == ids[2] and rows[ids[2]].same_as == ""


def polyak_summaries(with_faster: bool) -> dict:
    """reexamine-polyak's uncapped ends-ahead row and, if `with_faster`, its uncapped
    polyak-faster row: different numbers read from the same runs."""
    ends = Claim("NGD ends ahead", id="reexamine-polyak/ngd-ends-ahead-cap-inf", rule=RULE,
                 effect=mean_effect([0.01, 0.02, 0.015]))  # fmt: skip
    faster = Claim("Polyak is faster", id="reexamine-polyak/polyak-faster-cap-inf", rule=RULE,
                   effect=mean_effect([0.3, 0.4, 0.35]))  # fmt: skip
    return {"reexamine-polyak": stored([faster, ends] if with_faster else [ends], quick=False)}


def test_a_row_declared_to_reread_another_rows_runs_is_listed_with_the_repeats():
    """Referee read 13: ngd-ends-ahead-cap-inf is polyak-faster-cap-inf's late levels read at
    the end of the same runs (its row says so): not independent evidence, not counted; its
    numbers differ, so only the entry's declaration (`PaperClaim.rereads`) can say so."""
    rows = register_rows(polyak_summaries(with_faster=True))
    ends = next(r for r in rows if r.cells[0] == "reexamine-polyak/ngd-ends-ahead-cap-inf")
    assert ends.same_as == "reexamine-polyak/polyak-faster-cap-inf"
    counts = headline(register_markdown(polyak_summaries(with_faster=True), "t"), "Verdicts: ")
    assert counts.get("not supported") == 1 and not counts.get("supported"), counts
    alone = register_rows(polyak_summaries(with_faster=False))
    ends = next(r for r in alone if r.cells[0] == "reexamine-polyak/ngd-ends-ahead-cap-inf")
    assert not ends.same_as  # nothing it rereads has a verdict: counted
