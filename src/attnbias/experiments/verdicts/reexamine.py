"""Claim rules of the re-examinations of three negative results (issue 16, point 6): did an
artefact of our setup make torch's Muon, constant-rate Adam and the capped Polyak step fail?

Each rule separates the artefact from the claim: a run that stalls where a float64 method of
the same kind keeps moving (`stalls_where`), one protocol ending closer to the max-margin
solution than another on the same seeds (`closer_than`; than each of several, every rate of a
sweep, `closer_than_each`), a claim that needs every setting of a sweep (`ends_ahead`; one
that needs only some setting is a `Claim(..., any_part=True)` of the settings' claims), and a
sweep whose end is set by a parameter that should not matter (`larger_cap_ends_closer`).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from ...claims import NOT_APPLICABLE, Claim, Rule, mean_effect
from ..runs import Curves, loglog_slope
from .atlas import STALLED_SLOPE, gap, lower_gap, stalled
from .common import described, final, values
from .ngd import MISALIGNMENT, faster

STALL_SOURCE = (
    f"ours: the atlas's stall criterion ({STALLED_SLOPE:g}); a normalised method that moves "
    "has slope ≈ 1"
)


def norm_slopes(c: Curves, start: float) -> np.ndarray:
    """Per run: the log–log slope of ‖W_t‖_F in t over the steps from `start` × the last."""
    return np.array([loglog_slope(c.steps, row, start) for row in values(c, "norm/2")])


def stalls_where(groups: dict[str, Curves], name: str, moving: str, start: float) -> Claim:
    """`name` stalls (‖W_t‖'s log–log slope, mean over seeds, below the atlas's stall slope)
    where `moving`, run on the same seeds, does not (its slope above it): the stall belongs to
    `name`'s implementation, not to the problem."""
    stalled, moved = norm_slopes(groups[name], start), norm_slopes(groups[moving], start)
    quantity = "log–log slope of ‖W_t‖_F in t over the last steps, mean over seeds"
    return Claim(
        f"{name} stalls where {moving} keeps moving on the same seeds: ‖W_t‖'s log–log slope "
        f"below {STALLED_SLOPE:g} for {name}, above it for {moving}",
        parts=[
            Claim("", rule=Rule(f"{quantity}, {name}", "<", STALLED_SLOPE, STALL_SOURCE),
                  effect=mean_effect(stalled)),
            Claim("", rule=Rule(f"{quantity}, {moving}", ">", STALLED_SLOPE, STALL_SOURCE),
                  effect=mean_effect(moved)),
        ],
        evidence={"fitted_over_steps_from": start, **described({name: stalled, moving: moved})},
    )  # fmt: skip


def closer_than(
    groups: dict[str, Curves], name: str, other: str, label: str, start: float
) -> Claim:
    """Per seed, `other`'s final margin gap in norm `label` over `name`'s exceeds 1: `name`
    ends closer to that norm's max-margin direction (runs that share a seed share data and
    W₀). A side whose ‖W_t‖ stalled (`atlas.stalled` from `start` × the last step, below the
    stall slope) ended where it stopped, not where it was heading: inconclusive."""
    paired_ratio = lower_gap(groups, name, other, label, "ours: any improvement (a ratio > 1)")
    slopes = {n: stalled(groups[n], start) for n in (name, other)}
    unmet = [
        f"{n} stalled: ‖W_t‖ stopped growing (log–log slope {slope:.3g} < {STALLED_SLOPE:g})"
        for n, slope in slopes.items()
        if not slope > STALLED_SLOPE
    ]
    return Claim(
        f"{name} ends closer to the {label} max-margin direction than {other} (final gap in "
        f"{label} smaller, paired by seed)",
        rule=paired_ratio.rule,
        effect=paired_ratio.effect,
        unmet=unmet,
        evidence={"norm_growth_slope": slopes,
                  **described({n: final(groups[n], gap(label)) for n in (name, other)})},
    )  # fmt: skip


def closer_than_each(
    groups: dict[str, Curves], name: str, others: list[str], label: str, start: float
) -> Claim:
    """`name` ends closer than each of `others` (`closer_than`, one part each): with `others`
    the runs of a sweep (every rate, every variant), the claim holds at every setting, and one
    setting where it fails refutes it, at Holm's corrected level for the k settings."""
    return Claim(
        f"{name} ends closer to the {label} max-margin direction than each of "
        f"{', '.join(others)} (paired by seed)",
        parts=[closer_than(groups, name, other, label, start) for other in others],
    )


def stopped(c: Curves, start: float) -> np.ndarray:
    """Per run: did its iterate stop, ‖W_t‖ the very same number at every recorded step from
    `start` × the last on? (Polyak's step is 0 once L − L* rounds to 0 in float64.)"""
    late = c.steps >= start * c.steps[-1]
    return np.array([np.ptp(row[late]) == 0 for row in values(c, "norm/2")], dtype=bool)


def unless_stopped(part: Claim, groups: dict[str, Curves], names: list[str], start: float):
    """`part`, made inconclusive where some runs of `names` stopped (`stopped`): a final value
    the float64 floor froze says nothing about who is ahead."""
    why = [
        f"{halted} run(s) of {name} stopped: ‖W_t‖ constant from step {start:g}·last"
        for name in names
        if (halted := int(np.sum(stopped(groups[name], start)))) > 0
    ]
    if not why:
        return part
    return Claim(part.claim, rule=part.rule, effect=part.effect, unmet=why,
                 evidence=part.evidence)  # fmt: skip


def ends_ahead(
    groups: dict[str, Curves], name: str, others: list[str], who: str, start: float
) -> Claim:
    """`name` ends with a smaller misalignment than each of `others` (described as `who`) at
    equal steps (per-seed ratio of final misalignments > 1, every one of them): who is ahead
    once the run ends. Against a group some of whose runs stopped (`stopped`: the float64
    floor, not the method, ended them) the comparison is inconclusive."""
    source = "ours: any lead at the last step (a ratio > 1)"
    parts = [
        unless_stopped(faster(groups, other, name, MISALIGNMENT, 1.0, source), groups, [other],
                       start)
        for other in others
    ]  # fmt: skip
    return Claim(
        f"{name} ends ahead of {who}: smaller final misalignment at equal steps (paired by seed)",
        parts=parts,
        evidence={
            "stopped_runs": {o: int(np.sum(stopped(groups[o], start))) for o in others},
            **described({n: final(groups[n], MISALIGNMENT) for n in [name, *others]}),
        },
    )


def larger_cap_ends_closer(groups: dict[str, Curves], by_cap: list[str], start: float) -> Claim:
    """The artefact behind "NGD ends ahead of Polyak": `by_cap` names Polyak's runs in order
    of increasing cap γ_b (one c); each ends with a smaller final misalignment than the one
    before it, paired by seed. Late in a run the capped step is a GD step of size γ_b, so how
    far Polyak gets is set by γ_b, not by the Polyak rule. A pair with stopped runs
    (`stopped`, from `start` × the last step) is inconclusive."""
    source = "ours: any improvement (a ratio > 1) from raising the cap"
    parts = [
        unless_stopped(faster(groups, low, high, MISALIGNMENT, 1.0, source), groups,
                       [low, high], start)
        for low, high in pairwise(by_cap)
    ]  # fmt: skip
    return Claim(
        f"The cap decides how far Polyak gets: each larger γ_b ({', '.join(by_cap)}) ends with "
        "a smaller misalignment at equal steps (paired by seed)",
        parts=parts,
    )


def explains(explanation: str, evidence: list[Claim]) -> Claim:
    """A candidate explanation of an earlier negative verdict (an artefact of the setup, or a
    property of the method) holds when every claim of `evidence` (each removing or exposing
    the cause) is supported; not supported when one is not; inconclusive otherwise, and
    when a piece of its evidence could not be judged (not applicable: not run); not
    applicable when none could."""
    judged = [claim for claim in evidence if claim.status != NOT_APPLICABLE]
    unrun = [
        f"{claim.id or claim.claim}: not applicable"
        for claim in evidence
        if claim.status == NOT_APPLICABLE
    ]
    return Claim(explanation, parts=evidence, unmet=unrun if judged else [])
