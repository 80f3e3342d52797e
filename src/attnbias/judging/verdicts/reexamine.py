"""Claim rules of the re-examinations of three negative results (issue 16, point 6): did an
artefact of our setup make torch's Muon, constant-rate Adam and the capped Polyak step fail?

Each rule separates the artefact from the claim: a run that stalls where a float64 method of
the same kind keeps moving (`stalls_where`), one protocol ending closer to the max-margin
solution than another on the same seeds (`closer_than`; than each of several, every rate of a
sweep, `closer_than_each`), a claim that needs every setting of a sweep (`ends_ahead`; one
that needs only some setting is a `Claim(..., any_part=True)` of the settings' claims), and a
sweep whose end is set by a parameter that should not matter (`larger_cap_ends_closer`).
The last two compare where both runs still moved (`ahead_while_moving`): at the end, unless a
run stopped before it (float64 ended its step); a comparison at such a float64 stop is an
artefact, not a finding, and is inconclusive with that reason.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from ...curves import Curves
from ..claims import (
    NOT_APPLICABLE,
    SUPPORTED,
    Claim,
    Rule,
    mean_effect,
    ratio_effect,
    verdict_word,
)
from .atlas import STALLED_SLOPE, as_run_note, gap, lower_gap, stall_reason, stalled
from .common import described, final, paired, seeds_of, values
from .ngd import LABELS, MISALIGNMENT, norm_slopes
from .tuning import interval_would

STALL_SOURCE = (
    f"ours: the atlas's stall criterion ({STALLED_SLOPE:g}); a normalised method that moves "
    "has slope ≈ 1"
)


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


def gap_at_norm(c: Curves, label: str, targets: np.ndarray) -> np.ndarray:
    """Per run of `c`, its margin gap in norm `label` where its ‖W_t‖_F first reaches that
    run's target, interpolated linearly in log ‖W_t‖_F between the recorded steps around it;
    NaN where it never does."""
    norms, gaps = values(c, "norm/2"), values(c, gap(label))
    out = np.full(len(targets), np.nan)
    for run, (row, g, target) in enumerate(zip(norms, gaps, targets)):
        reached = np.flatnonzero(row >= target)
        if reached.size:
            k = max(int(reached[0]), 1)
            out[run] = np.interp(np.log(target), np.log(row[k - 1 : k + 1]), g[k - 1 : k + 1])
    return out


def lower_gap_at_equal_norm(groups, name: str, other: str, label: str) -> tuple[Claim, list]:
    """Per seed, `other`'s gap in norm `label` where its ‖W_t‖_F first reaches `name`'s final
    one (`gap_at_norm`) over `name`'s final gap exceeds 1: `name` is closer at equal distance
    travelled. With the reason where `other` never reaches it (those seeds are left out)."""
    c, runs = groups[other], np.arange(len(seeds_of(groups[other])))
    at, targets = paired(c, groups[name], runs, final(groups[name], "norm/2"))
    _, own = paired(c, groups[name], runs, final(groups[name], gap(label)))
    theirs = gap_at_norm(Curves(c.steps, {k: v[at] for k, v in c.values.items()}), label, targets)
    missed = int(np.sum(np.isnan(theirs)))
    rule = Rule(f"gap in {label} at {name}'s final ‖W_t‖_F: {other} over {name}, per seed", ">",
                1.0, "ours: any improvement (a ratio > 1) at equal ‖W_t‖_F", 1.0)  # fmt: skip
    unmet = [f"{other}'s ‖W_t‖_F never reaches {name}'s final in {missed} of {len(at)} seeds"]
    return Claim("", rule=rule, effect=ratio_effect(theirs, own)), unmet if missed else []


def closer_than(
    groups: dict[str, Curves],
    name: str,
    other: str,
    label: str,
    start: float,
    stall_decides_nothing: dict[str, str] | None = None,
    at_equal_norm: bool = False,
) -> Claim:
    """Per seed, `other`'s final margin gap in norm `label` over `name`'s exceeds 1: `name`
    ends closer to that norm's max-margin direction (runs that share a seed share data and
    W₀). The row compares the two settings as run (docs/REFEREE.md): a side whose ‖W_t‖
    stalled (`atlas.stalled` from `start` × the last step, below the stall slope) ended where
    it stopped, and that is its outcome, printed beside the effect with its final gap —
    unless `stall_decides_nothing` (arm → why its stall is no outcome, and what would decide
    it) names that side: a comparison with such a stalled arm is no evidence, and the row is
    inconclusive with the reason. `at_equal_norm`: `other` is compared where its ‖W_t‖_F
    reaches `name`'s final (`lower_gap_at_equal_norm`), for arms whose step schedules travel
    very different distances in the same steps (the final gaps are then evidence)."""
    if at_equal_norm:
        paired_ratio, unreached = lower_gap_at_equal_norm(groups, name, other, label)
        text = (f"{name} is closer to the {label} max-margin direction than {other} at equal "
                f"‖W_t‖_F ({name}'s final; {other} where its ‖W_t‖_F first reaches it, "
                "paired by seed; as run)")  # fmt: skip
    else:
        paired_ratio = lower_gap(groups, name, other, label, "ours: any improvement (a ratio > 1)")
        unreached = []
        text = (f"{name} ends closer to the {label} max-margin direction than {other} (final "
                f"gap in {label} smaller, paired by seed; as run)")  # fmt: skip
    slopes = {n: stalled(groups[n], start) for n in (name, other)}
    gaps = {n: final(groups[n], gap(label)) for n in (name, other)}
    stalls = {n: why for n, slope in slopes.items() if (why := stall_reason(n, slope))}
    undecided = stall_decides_nothing or {}
    unmet = [f"{why}: {undecided[n]}" for n, why in stalls.items() if n in undecided]
    unmet += unreached
    outcomes = dict(stalls)
    for n in undecided:  # their stalls are reasons above, not outcomes
        outcomes.pop(n, None)
    medians = {n: float(np.median(gaps[n])) for n in outcomes if len(gaps[n])}  # none: diverged
    return Claim(
        text,
        rule=paired_ratio.rule,
        effect=paired_ratio.effect,
        unmet=unmet,
        evidence={"norm_growth_slope": slopes, **as_run_note(list(outcomes.values()), medians),
                  **described(gaps)},
    )  # fmt: skip


def closer_than_each(
    groups: dict[str, Curves],
    name: str,
    others: list[str],
    label: str,
    start: float,
    stall_decides_nothing: dict[str, str] | None = None,
    at_equal_norm: bool = False,
) -> Claim:
    """`name` ends closer than each of `others` (`closer_than`, one part each): with `others`
    the runs of a sweep (every rate, every variant), the claim holds at every setting, and one
    setting where it fails refutes it, at Holm's corrected level for the k settings."""
    where = " at equal ‖W_t‖_F" if at_equal_norm else ""
    return Claim(
        f"{name} ends closer to the {label} max-margin direction than each of "
        f"{', '.join(others)}{where} (paired by seed)",
        parts=[closer_than(groups, name, other, label, start, stall_decides_nothing,
                           at_equal_norm) for other in others],
    )  # fmt: skip


def moving_until(c: Curves) -> np.ndarray:
    """Per run: the last recorded step at which its iterate was still moving. The last step
    for a run whose ‖W_t‖ changed in the last recorded interval; for one that stopped (‖W_t‖
    the same number from some recorded step on), the recorded step before that; NaN for one
    that never moved. A step float64 ends (Polyak's, before its L − L* was computed
    scale-safely: 0 once L − L* rounded to 0) leaves the state where float64 stopped it, not
    where the method was heading; and its last move may be rounding noise, so the step before
    it is the last one trusted."""
    moved = np.diff(values(c, "norm/2"), axis=1) != 0  # between recorded steps k and k + 1
    out = np.full(moved.shape[0], np.nan)
    for run, row in enumerate(moved):
        if row.any():
            last = int(np.flatnonzero(row)[-1])
            out[run] = c.steps[last + 1] if last == row.size - 1 else c.steps[last]
    return out


# A stand-in for γ_b = ∞ keeps the uncapped step's pace (‖W_t‖ ∝ t) while it moves as the
# method would; below this log–log slope the stand-in cap binds, an artefact of float64's range.
PACE_SLOPE = 0.5


def at_steps(c: Curves, metric: str, rows: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """`metric` of run `rows[i]` at its last recorded step ≤ `steps[i]` (NaN for a NaN step)."""
    out = np.full(len(rows), np.nan)
    known = np.isfinite(steps)
    where = np.searchsorted(c.steps, steps[known], side="right") - 1
    out[known] = values(c, metric)[rows[known], where]
    return out


def ahead_while_moving(
    groups: dict[str, Curves],
    slow: str,
    fast: str,
    source: str,
    doubts: dict | None = None,
) -> Claim:
    """`fast` has the smaller misalignment than `slow` at each seed's common horizon: the
    last recorded step at which both runs of the seed were still moving (`moving_until`),
    the last step where neither stopped. Equal steps on both sides, never the state float64
    froze a run in. A horizon before the end (a run stopped moving: float64's stop)
    compares the runs where float64 ended one of them, not
    where the runs end: an artefact, so the part is inconclusive and says where it stopped;
    past that step float64 cannot compute the run, so no float64 run decides it. `doubts`:
    what the interval would say ("supports", "refutes") → why that cannot stand (a side's
    tuned step at its grid's edge: `tuning.edge_doubt`)."""
    a, b = groups[slow], groups[fast]
    rows_a, rows_b = paired(a, b, np.arange(len(seeds_of(a))), np.arange(len(seeds_of(b))))
    until_a, until_b = moving_until(a)[rows_a], moving_until(b)[rows_b]
    horizon = np.minimum(until_a, until_b)
    slow_at = at_steps(a, MISALIGNMENT, rows_a, horizon)
    fast_at = at_steps(b, MISALIGNMENT, rows_b, horizon)
    quantity = (
        f"{LABELS[MISALIGNMENT]} at the last recorded step at which both runs of a seed still "
        f"moved: {slow} over {fast}, per seed"
    )
    rule = Rule(quantity, ">", 1.0, source, 1.0)
    effect = ratio_effect(slow_at, fast_at)
    runs = ((slow, until_a, a), (fast, until_b, b))
    stops = {name: until < c.steps[-1] for name, until, c in runs}  # stopped before the end
    unmet = [f"no seed on which both {slow} and {fast} moved"]
    if effect.n:
        would = interval_would(effect)
        unmet = float_stops(stops, horizon, a.steps[-1])
        unmet += [why for doubted, why in (doubts or {}).items() if doubted == would]
    return Claim(
        f"{fast} has a smaller misalignment than {slow} at equal steps, at the last step at "
        "which both still moved (paired by seed)",
        rule=rule,
        effect=effect,
        unmet=unmet,
        evidence={
            "horizon_steps": described({"common": horizon[np.isfinite(horizon)]}),
            **described({slow: slow_at, fast: fast_at}),
        },
    )


def float_stops(stops: dict[str, np.ndarray], horizon: np.ndarray, last: float) -> list[str]:
    """The reason a comparison at `horizon` (per seed) is an artefact: `stops` (run name → per
    seed, whether that run stopped moving before the end) says which runs float64 stopped,
    on how many seeds and, as the median horizon of those seeds, where."""
    early = np.logical_or.reduce(list(stops.values()))
    if not early.any():
        return []
    names = " and ".join(name for name, stopped in stops.items() if stopped.any())
    return [
        f"compared at a float64 stop, not at the end: {names} stopped moving (‖W_t‖ frozen) "
        f"by step {np.median(horizon[early]):.0f} of {last:.0f} on {int(early.sum())} of "
        f"{early.size} seeds; past it float64 cannot compute the run's step (Polyak's: its "
        "L − L* is taken from the other tokens' scores, which underflow at logit gaps ~745), "
        "so only arithmetic with a wider exponent range would decide it"
    ]


def ends_ahead(
    groups: dict[str, Curves],
    name: str,
    others: list[str],
    who: str,
    doubts: dict | None = None,
) -> Claim:
    """`name` ends with a smaller misalignment than each of `others` (described as `who`) at
    equal steps (per-seed ratio > 1, every one of them): who is ahead once the runs end; where
    a run stopped before the end (`moving_until`: the float64 floor, not the method, ended it)
    the comparison is at that float64 stop, and inconclusive (`ahead_while_moving`, as are
    `doubts`)."""
    source = "ours: any lead at the end (a ratio > 1)"
    return Claim(
        f"{name} ends ahead of {who}: smaller misalignment at equal steps, at the end (paired "
        "by seed; where float64 stopped a run first, compared there: inconclusive)",
        parts=[ahead_while_moving(groups, other, name, source, doubts) for other in others],
        evidence=described({n: final(groups[n], MISALIGNMENT) for n in [name, *others]}),
    )


def larger_cap_ends_closer(groups: dict[str, Curves], by_cap: list[str]) -> Claim:
    """The artefact behind "NGD ends ahead of Polyak": `by_cap` names Polyak's runs in order
    of increasing cap γ_b (one c); each ends with a smaller misalignment than the one before
    it, paired by seed, at the end (`ahead_while_moving`: a comparison at a float64 stop is
    inconclusive). Late in a run the
    capped step is a GD step of size γ_b, so how far Polyak gets is set by γ_b, not by the
    Polyak rule."""
    source = "ours: any improvement (a ratio > 1) from raising the cap"
    return Claim(
        f"The cap decides how far Polyak gets: each larger γ_b ({', '.join(by_cap)}) ends with "
        "a smaller misalignment at equal steps, at the end (paired by seed; where float64 "
        "stopped a run first, compared there: inconclusive)",
        parts=[ahead_while_moving(groups, low, high, source) for low, high in pairwise(by_cap)],
    )


def explains(explanation: str, evidence: list[Claim]) -> Claim:
    """A candidate explanation of an earlier negative verdict (an artefact of the setup, or a
    property of the method) holds when every claim of `evidence` (each removing or exposing
    the cause) is supported; not supported when one is not; inconclusive otherwise, and
    when a piece of its evidence could not be judged (not applicable: not run); not
    applicable when none could. A consistency check among the evidence (a check of our code,
    `claims.as_consistency_check`) is a precondition, not a part: one that does not pass leaves
    the explanation inconclusive, named."""
    checks = [claim for claim in evidence if claim.consistency]
    evidence = [claim for claim in evidence if not claim.consistency]
    judged = [claim for claim in evidence if claim.status != NOT_APPLICABLE]
    unrun = [
        f"{claim.id or claim.claim}: not applicable"
        for claim in evidence
        if claim.status == NOT_APPLICABLE
    ]
    unchecked = [
        f"precondition not met: {claim.id or claim.claim}: {verdict_word(claim)}"
        for claim in checks
        if claim.status != SUPPORTED
    ]
    return Claim(explanation, parts=evidence, unmet=unrun + unchecked if judged else [])
