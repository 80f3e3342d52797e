"""`attnbias claims --experiment NAME --verdict WORD --format md|csv|json`: the register's
rows chosen by experiment and verdict, as its Markdown table or as machine-readable records.

A record is a register row (`register.answered`) with its fields as values, not as
printed cells: the claim's verdict and reasons, and for each measured part its rule, effect,
95 % CI, n, verdict and, when inconclusive, why (a not-applicable part: what it would have
compared, and why not). CSV has one line per part (a row without one, one line); JSON one
object per row with its parts as a list.
"""

from __future__ import annotations

import csv
import io

from .cli_tally import NOT_RUN
from .judging import register
from .judging.claims import (
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_SUPPORTED,
    SUPPORTED,
    is_consistency_check,
    leaf_reason,
    measured_parts,
    reasons,
    sensitivity_text,
    status_of,
    unmeasured_parts,
    verdict_word,
)
from .judging.register import answered, markdown_table, register_rows
from .store import json_text

# --verdict's words (one word each on the command line; cli.VERDICT_WORDS names them in the
# help, which imports nothing heavy) → the register's verdicts
VERDICTS = {
    "supported": SUPPORTED,
    "not-supported": NOT_SUPPORTED,
    "inconclusive": INCONCLUSIVE,
    "not-applicable": NOT_APPLICABLE,
    "not-run": NOT_RUN,
}
ROW_FIELDS = (
    "experiment", "id", "paper", "where", "the_paper_says", "verdict", "verdict_words",
    "reasons", "consistency_check", "scale", "sensitivity", "protocol_differences",
)  # fmt: skip
PART_FIELDS = (
    "part", "rule", "quantity", "comparison", "threshold", "threshold_from", "estimate",
    "ci_low", "ci_high", "n", "unit", "method", "part_verdict", "part_reason",
)  # fmt: skip


def option_values(typed: list[str] | None, valid: list[str], flag: str) -> list[str] | None:
    """The values of a repeatable option that also takes comma lists (None: not given);
    ValueError naming what was typed and the valid values."""
    if not typed:
        return None
    values = [v.strip() for item in typed for v in item.split(",")]
    for value in values:
        if value not in valid:
            raise ValueError(f"{flag} {value!r}: not one of {', '.join(valid)}")
    return values


def part_record(index: int, leaf: dict) -> dict:
    """A measured part's fields: its rule, its effect with its 95 % CI and n, its verdict and
    (inconclusive) why."""
    rule, effect = leaf["rule"], leaf.get("effect") or {}
    status = status_of(leaf)
    return {
        "part": index,
        "rule": f"{rule['quantity']} {rule['comparison']} {rule['threshold']:g}",
        "quantity": rule["quantity"],
        "comparison": rule["comparison"],
        "threshold": rule["threshold"],
        "threshold_from": rule["source"],
        "estimate": effect.get("estimate"),
        "ci_low": effect.get("low"),
        "ci_high": effect.get("high"),
        "n": effect.get("n"),
        "unit": effect.get("unit"),
        "method": effect.get("method"),
        "part_verdict": status,
        "part_reason": leaf_reason(leaf) if status == INCONCLUSIVE else "",
    }


def idle_record(index: int, part: dict) -> dict:
    """A not-applicable part's fields: what it would have compared, its verdict and why."""
    return {field: None for field in PART_FIELDS} | {
        "part": index,
        "rule": part["claim"],
        "part_verdict": NOT_APPLICABLE,
        "part_reason": part["evidence"]["not_applicable"],
    }


def part_records(claim: dict) -> list[dict]:
    """The claim's measured parts, then its not-applicable ones (as the register lists them)."""
    leaves = measured_parts(claim)
    idle = unmeasured_parts(claim) if leaves else []
    return [part_record(i, leaf) for i, leaf in enumerate(leaves, 1)] + [
        idle_record(i, part) for i, part in enumerate(idle, len(leaves) + 1)
    ]


def records(found: dict[str, dict]) -> list[dict]:
    """Every register row as a record (ROW_FIELDS and "parts", a list of PART_FIELDS)."""
    rows = []
    for entry, summary, claim in answered(found):
        record = {
            "experiment": entry.experiment,
            "id": entry.id if claim is None else claim.get("id", entry.id),
            "paper": entry.paper,
            "where": entry.where,
            "the_paper_says": entry.wording,
            "verdict": NOT_RUN if claim is None else status_of(claim),
            "verdict_words": register.NOT_RUN_WORDS if claim is None else verdict_word(claim),
            "reasons": "" if claim is None else "; ".join(reasons(claim)),
            "consistency_check": entry.consistency
            if claim is None
            else is_consistency_check(claim),
            "scale": "" if claim is None else "quick" if "scale" in summary else "full",
            "sensitivity": "" if claim is None else sensitivity_text(claim),
            "protocol_differences": entry.differences,
            "parts": [] if claim is None else part_records(claim),
        }
        rows.append(record)
    return rows


def csv_text(rows: list[dict]) -> str:
    """One line per part of each row, measured or not applicable (a row without parts: one
    line)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, [*ROW_FIELDS, *PART_FIELDS], lineterminator="\n")
    writer.writeheader()
    for row in rows:
        fields = {k: row[k] for k in ROW_FIELDS}
        for part in row["parts"] or [{}]:
            writer.writerow({**fields, **part})
    return out.getvalue()


def chosen_register(
    found: dict[str, dict], form: str, experiments: list[str] | None, verdicts: list[str] | None
) -> str:
    """The register's rows of `experiments` with `verdicts` (as VERDICTS' words; None: all)
    in format `form`: md, the register's table; csv; json."""
    wanted = None if verdicts is None else {VERDICTS[v] for v in verdicts}

    def keep(experiment: str, verdict: str) -> bool:
        return (experiments is None or experiment in experiments) and (
            wanted is None or verdict in wanted
        )

    if form == "md":  # the register's rows say "not run" at length
        rows = [
            r
            for r in register_rows(found)
            if keep(r.experiment, NOT_RUN if r.verdict == register.NOT_RUN_WORDS else r.verdict)
        ]
        return "\n".join(markdown_table(rows)) + "\n"
    picked = [r for r in records(found) if keep(r["experiment"], r["verdict"])]
    return csv_text(picked) if form == "csv" else json_text(picked) + "\n"
