"""The tally that ends `attnbias reproduce`: per experiment and in total, how many claims are
supported, not supported, inconclusive (and why, by kind), not applicable or not run, the
consistency checks of the code counted apart; and what quick scale means for them.

Counted from the summaries' stored verdicts (`claims.status_of`, `claims.causes`) and the
register's entries (`register.entries()`), never from printed text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .judging.claims import (
    CAUSES,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_SUPPORTED,
    SUPPORTED,
    causes,
    is_consistency_check,
    status_of,
)
from .judging.register import entries, matching, repeated, superseded

NOT_RUN = "not run"
COLUMNS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_APPLICABLE, NOT_RUN)
QUICK_MEANS = (
    "quick scale is a smoke run of the code, not evidence: few seeds widen the intervals "
    "(inconclusive) and short runs stop before the limits the claims are about (not "
    "supported, or a precondition failed); the full-scale verdicts are docs/CLAIMS.md's "
    "(`attnbias reproduce all --full --out results/full`)"
)


@dataclass
class Tally:
    """Counts of claims: the verdicts on the papers' claims by status (and NOT_RUN: register
    entries without a verdict), the inconclusive ones by cause (a claim with several causes
    counts under each), and the consistency checks of the code by status."""

    verdicts: Counter = field(default_factory=Counter)
    causes: Counter = field(default_factory=Counter)
    checks: Counter = field(default_factory=Counter)

    def __iadd__(self, other: Tally) -> Tally:
        self.verdicts += other.verdicts
        self.causes += other.causes
        self.checks += other.checks
        return self


def tally_of(summary: dict | None, experiment: str, repeats=()) -> Tally:
    """The tally of one experiment: its summary's claims (None: it did not run) but those in
    `repeats` (ids of claims that repeat another claim's evidence, or that a later claim
    supersedes: counted there), and the register's entries for it that no claim of the summary
    answers, as not run."""
    tally = Tally()
    claims = [c for c in (summary or {}).get("claims", []) if c.get("id") not in repeats]
    for claim in claims:
        status = status_of(claim)
        if is_consistency_check(claim):
            tally.checks[status] += 1
        else:
            tally.verdicts[status] += 1
            tally.causes.update(causes(claim))
    for entry in entries():
        if entry.experiment == experiment and not matching(entry, summary):
            (tally.checks if entry.consistency else tally.verdicts)[NOT_RUN] += 1
    return tally


def tallies(summaries: dict[str, dict], not_run: list[str] = ()) -> dict[str, Tally]:
    """The tally of each experiment that ran (`summaries`, by name) and of each of `not_run`."""
    apart = repeated(summaries) | superseded(summaries)
    found = {name: tally_of(summary, name, apart) for name, summary in summaries.items()}
    found |= {name: tally_of(None, name) for name in not_run if name not in found}
    return found


def why_text(tally: Tally) -> str:
    """The causes of the inconclusive verdicts with their counts, most frequent first."""
    ordered = sorted(tally.causes.items(), key=lambda item: (-item[1], CAUSES.index(item[0])))
    return ", ".join(f"{cause} {count}" for cause, count in ordered)


def checks_text(tally: Tally) -> str:
    """The consistency checks as "k of n pass" (n: those run), and how many were not run."""
    ran = sum(count for status, count in tally.checks.items() if status != NOT_RUN)
    text = f"{tally.checks[SUPPORTED]} of {ran} pass" if ran else "—"
    if tally.checks[NOT_RUN]:
        text += f", {tally.checks[NOT_RUN]} not run"
    return text


def tally_lines(summaries: dict[str, dict], not_run: list[str] = ()) -> list[str]:
    """The tally as lines: a header, one row per experiment (those of `summaries`, which ran,
    then those of `not_run`), the total, and, if any summary is at quick scale (its "scale"
    note), what quick scale means for them."""
    rows = tallies(summaries, not_run)
    total = Tally()
    for tally in rows.values():
        total += tally
    width = max(len("total"), *(len(name) for name in rows))
    heads = [*COLUMNS, "checks of the code"]
    sizes = [max(len(h), 5) for h in heads[:-1]] + [len(heads[-1])]

    def line(name: str, tally: Tally) -> str:
        cells = [f"{tally.verdicts[c]:{s}d}" for c, s in zip(COLUMNS, sizes)]
        checks = f"{checks_text(tally):{sizes[-1]}s}"
        why = why_text(tally)
        return (f"  {name:{width}s}  " + "  ".join([*cells, checks, why])).rstrip()

    head = "  ".join(f"{h:>{s}s}" if h in COLUMNS else f"{h:{s}s}" for h, s in zip(heads, sizes))
    lines = [
        "Tally of the verdicts on the papers' claims (the consistency checks of the code "
        "apart; an inconclusive verdict's causes at the end of its row):",
        f"  {'':{width}s}  {head}  why inconclusive",
        *(line(name, tally) for name, tally in rows.items()),
        line("total", total),
    ]
    if repeats := repeated(summaries):
        lines.append(
            f"  not counted: {len(repeats)} claim(s) repeating another's evidence (the same "
            "runs), each counted once where it first appears: "
            + ", ".join(f"{claim} (see {first})" for claim, first in repeats.items())
        )
    if replaced := superseded(summaries):
        lines.append(
            f"  not counted: {len(replaced)} claim(s) superseded by a later claim whose design "
            "decides them: "
            + ", ".join(f"{claim} (see {later})" for claim, later in replaced.items())
        )
    if not_run:
        lines.append(
            f"  not run here: {', '.join(not_run)} (their register entries are counted as not "
            "run; `attnbias reproduce NAME --quick` runs one)"
        )
    if any("scale" in summary for summary in summaries.values()):
        lines.append(f"  {QUICK_MEANS}")
    return lines
