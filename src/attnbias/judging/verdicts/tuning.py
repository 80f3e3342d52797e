"""Speed compared at tuned step sizes (issue 29: "X beats GD" at untuned, unequal rates says
little). Each method's step is chosen from a grid of factors of its config's step by its own
score on selection seeds; the level a pair is timed at is set on those seeds too; the methods
are then compared at their chosen steps on evaluation seeds disjoint from them, paired by seed.
Nothing measured on an evaluation seed chooses a rate or a level (select on validation, judge
on test)."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field, replace

import numpy as np

from ...curves import Curves
from ..claims import NOT_SUPPORTED, SUPPORTED, Claim, Rule, ratio_effect
from .common import described, paired, second_column, steps_to_reach, values

SCORE = (
    "per metric, its log averaged over the recorded steps (log-spaced: the area under the log "
    "curve in log t), mean over the selection seeds; lower is faster, a diverged run scores "
    "worst"
)
LEVEL_RULE = (
    "per pair and metric, the level the slower of the two reaches at half the budget on the "
    "selection seeds at their chosen steps (the larger of their median values at the recorded "
    "step nearest half the steps)"
)
TINIEST = np.nextafter(0.0, 1.0)  # a value that underflowed to 0 scores as float64's floor


def rate_score(c: Curves, metric: str) -> float:
    """SCORE of one step factor's runs on `metric`; inf (worst) when a run diverged or none
    finished."""
    if c.diverged or values(c, metric).shape[0] == 0:
        return math.inf
    logs = np.log(np.maximum(values(c, metric), TINIEST))
    score = float(np.mean(logs))
    return score if np.isfinite(score) else math.inf


FINAL_SCORE = (
    "the final value of the metric, median over the selection seeds; lower is better, a "
    "diverged run scores worst"
)


def final_score(c: Curves, metric: str) -> float:
    """FINAL_SCORE of one step factor's runs on `metric` (where a run ends, not how fast it
    gets there: a margin gap's limit); inf when a run diverged or none finished."""
    if c.diverged or values(c, metric).shape[0] == 0:
        return math.inf
    score = float(np.median(c.final(metric)))
    return score if np.isfinite(score) else math.inf


def rate_scores(by_factor: dict[float, Curves], metric: str, score: str = "rate") -> dict:
    """Each factor's score by `score`'s rule: "rate" (`rate_score`, how fast) or "final"
    (`final_score`, where the runs end); named, not passed, so that a score is one rule."""
    if score not in ("rate", "final"):
        raise ValueError(f"score must be 'rate' or 'final', got {score!r}")
    rule = final_score if score == "final" else rate_score
    return {factor: rule(c, metric) for factor, c in by_factor.items()}


def chosen_factor(scores: dict[float, float]) -> float:
    """The factor with the lowest score; a tie goes to the factor nearest 1 (the config's)."""
    return min(scores, key=lambda f: (scores[f], abs(math.log(f))))


@dataclass
class Tuned:
    """selection: method → step factor → its runs on the selection seeds; evaluation: method →
    step factor → its runs on the evaluation seeds (at least at the chosen factors); steps:
    method → (the name of the step a factor scales, e.g. "η", and its config value); score:
    what chooses a factor (`rate_scores`: "rate", speed; "final", where the runs end)."""

    selection: dict[str, dict[float, Curves]]
    evaluation: dict[str, dict[float, Curves]]
    steps: dict[str, tuple[str, float]]
    score: str = "rate"
    # method → step factor → its runs on fresh confirmation seeds, where some ran
    confirmation: dict[str, dict[float, Curves]] | None = None
    # seeds of an earlier confirmation ("2001–2100") → method → step factor → its runs there
    earlier: dict[str, dict[str, dict[float, Curves]]] = field(default_factory=dict)

    def chosen(self, method: str, metric: str) -> float:
        return chosen_factor(rate_scores(self.selection[method], metric, self.score))

    def step_label(self, method: str, metric: str) -> str:
        """The chosen step as a value: "η = 0.2"."""
        name, value = self.steps[method]
        return f"{name} = {value * self.chosen(method, metric):.3g}"

    def at_chosen(self, metric: str) -> dict[str, Curves]:
        """Each method's evaluation runs at its step chosen for `metric`."""
        return {m: by[self.chosen(m, metric)] for m, by in self.evaluation.items()}


def grid_edge(factors, chosen: float) -> str:
    """ "largest" or "smallest" when `chosen` is at that edge of the factors tried (the grid does
    not bracket the best step), else "". A single factor is no grid (a method run at its own
    setting, not tuned): it has no edge."""
    if len(set(factors)) < 2:
        return ""
    if chosen >= max(factors):
        return "largest"
    if chosen <= min(factors):
        return "smallest"
    return ""


def edge_doubt(tuned: Tuned, method: str, metric: str, would: str) -> str:
    """Why `method`'s best step for `metric` leaves open what the interval `would` do
    ("supports", "refutes"): it is at an edge of the grid tried; "" when the grid brackets it."""
    chosen = tuned.chosen(method, metric)
    edge = grid_edge(tuned.selection[method], chosen)
    if not edge:
        return ""
    tried = ", ".join(f"{f:g}" for f in sorted(tuned.selection[method]))
    return (f"{method}'s best step ({tuned.step_label(method, metric)}) is the {edge} tried "
            f"(factors {tried} of its config step): the grid does not bracket it, and a better "
            f"step could overturn what the interval {would}; a grid that brackets it (more "
            "rate_extensions) would decide it, if the metric has a best step at all (on "
            "separable data a loss, or the other tokens' mass, can keep falling faster the "
            "larger the step, without bound: then no grid does)")  # fmt: skip


# The verdict a doubt can overturn, as what the interval does.
WOULD = {SUPPORTED: "supports", NOT_SUPPORTED: "refutes"}


def unless_at_edge(claim: Claim, tuned: Tuned, metric: str, overturns: dict[str, str]) -> Claim:
    """`claim`, about methods each judged at its step chosen for `metric`, made inconclusive
    where a method's best step sits at an edge of the grid and the claim's verdict is one a
    better step for it could overturn (`overturns`: method → SUPPORTED or NOT_SUPPORTED, or
    "" for either); the other verdict stands (`edge_doubt`)."""
    would = WOULD.get(claim.status, "")
    doubts = [edge_doubt(tuned, method, metric, would) for method, verdict in overturns.items()
              if would and verdict in ("", claim.status)]  # fmt: skip
    doubts = [doubt for doubt in doubts if doubt]
    return replace(claim, unmet=[*claim.unmet, *doubts]) if doubts else claim


def half_budget_value(c: Curves, metric: str) -> float:
    """The median over runs of `metric` at the recorded step nearest half the last one; NaN
    without runs."""
    v = values(c, metric)
    if v.shape[0] == 0:
        return math.nan
    column = int(np.argmin(np.abs(c.steps - c.steps[-1] / 2)))
    return float(np.median(v[:, column]))


def untimed(a: np.ndarray, b: np.ndarray, effect) -> list[str]:
    """Why `effect`, the ratio of a level's paired times a/b, straddles 1 where more seeds
    would not decide it: both runs of most pairs reach the level at the same step
    (`steps_to_reach` counts whole steps where the grid records each one), so the level does
    not separate the methods. Nothing where the interval decides: ties are data, and an
    interval that decides stands."""
    tied = int(np.sum(np.isfinite(a) & (a == b)))
    if a.size and 2 * tied > a.size and not interval_would(effect):
        return [f"in {tied} of {a.size} pairs both runs reach the level at the same step: "
                "the level does not separate the methods (a tie, not a lack of seeds: no "
                "number of seeds decides it, only a level they reach at different steps "
                "would)"]  # fmt: skip
    return []


# Which verdict a doubt about one side could overturn; the ratio is slow/fast. A best step at
# the grid's edge: a better step would make that side faster (slow's lowers the ratio: a
# support is unsafe; fast's raises it: a refutation is). A run that never reaches the level,
# timed at the budget: its true time is longer (slow's raises the ratio, fast's lowers it).
AT_EDGE = {"slow": "supports", "fast": "refutes"}
TIMED_AT_BUDGET = {"slow": "refutes", "fast": "supports"}


def interval_would(effect) -> str:
    """What a ratio's 95 % interval says of "> 1": "supports", "refutes" or "" (straddles)."""
    return "supports" if effect.low > 1.0 else "refutes" if effect.high < 1.0 else ""


def edge_doubts(tuned: Tuned, method: str, metric: str, role: str) -> dict[str, str]:
    """The verdict a best step of `method` (its `role` in a ratio slow/fast: "slow" or "fast")
    at the edge of its grid could overturn (`AT_EDGE`), with the reason (`edge_doubt`); {} when
    the grid brackets it."""
    would = AT_EDGE[role]
    doubt = edge_doubt(tuned, method, metric, would)
    return {would: doubt} if doubt else {}


def frozen_at_end(c: Curves, metric: str) -> np.ndarray:
    """Per run: is `metric` the very same float64 number at the last two recorded steps? A
    moving run's metric changes between log-spaced recorded steps; one that does not has
    stopped at float64's floor, or its metric has (a loss within an ulp of its infimum L*)."""
    v = values(c, metric)
    if v.shape[1] < 2:
        return np.zeros(v.shape[0], dtype=bool)
    return v[:, -1] == v[:, -2]


def frozen_from(c: Curves, metric: str) -> np.ndarray:
    """Per run: the first recorded step from which `metric` keeps its final float64 value to
    the end (the last step where it has not stopped): where a run frozen by float64 could
    have reached a level at the earliest, had its arithmetic not stopped it."""
    v = values(c, metric)
    if v.shape[1] == 0:
        return np.zeros(v.shape[0])
    same = np.logical_and.accumulate((v == v[:, -1:])[:, ::-1], axis=1)[:, ::-1]
    # a time to a level is at least one step
    return np.maximum(c.steps[np.argmax(same, axis=1)].astype(np.float64), 1.0)


def frozen_could_overturn(a, b, frozen, freeze, budget: float, would: str) -> bool:
    """Could the frozen runs' true times (`frozen`: per pair, is slow's, fast's run frozen;
    `freeze`: from which step) overturn what the interval of the times a/b (`would`) says?
    A frozen run could have reached the level at any step from its freeze on (timed at the
    budget, it sits at one end), so the ratio lies between a slow run at its freeze step
    with a fast run at the budget, and the reverse: only a verdict that changes between
    those ends is in doubt; a straddling interval is in doubt anyway."""
    if not would:
        return True
    low = ratio_effect(np.where(frozen[0], freeze[0], a), np.where(frozen[1], budget, b))
    high = ratio_effect(np.where(frozen[0], budget, a), np.where(frozen[1], freeze[1], b))
    return interval_would(low) != would or interval_would(high) != would


FLOAT_LEVEL = (
    "the level is 0: a run reaches it only where float64 rounds the metric to 0, so its time "
    "would say when float64 rounds, not how fast the method is; the part compares nothing "
    "(both methods take the metric below float64's range within half the budget)"
)


def start_value(c: Curves, metric: str) -> float:
    """The median over runs of `metric` at the second recorded step after 0 (`second_column`:
    a level met by then is met before two methods' steps can differ); NaN without runs."""
    column = second_column(c)
    v = values(c, metric)
    return float(np.median(v[:, column])) if v.shape[0] and column is not None else math.nan


PROFILE_RULE = (
    "the profile: besides LEVEL_RULE's level, every power of ten between it and where both "
    "methods start (below the larger of their median values at the second recorded step, on "
    "the selection seeds at their chosen steps: a level met by then is met before the "
    "methods' steps can differ, as a convergence threshold met by then tests nothing; until "
    "referee read 13 the first recorded step, whose top level tied in most pairs), each "
    "level a part"
)


def profile_levels(tuned: Tuned, slow: str, fast: str, metric: str) -> list[float]:
    """PROFILE_RULE's levels, from the highest decade down to LEVEL_RULE's level (last); only
    that level where it is not positive (no decade lies above 0 and below every value)."""
    runs = [tuned.selection[m][tuned.chosen(m, metric)] for m in (slow, fast)]
    level = max(half_budget_value(c, metric) for c in runs)
    top = max(start_value(c, metric) for c in runs)
    if not (np.isfinite(level) and level > 0 and np.isfinite(top) and top > level):
        return [level]
    exponents = range(math.ceil(math.log10(top)) - 1, math.floor(math.log10(level)), -1)
    decades = [10.0**k for k in exponents if level < 10.0**k < top]
    return [*decades, level]


def tuned_sooner(
    tuned: Tuned,
    slow: str,
    fast: str,
    metric: str,
    label: str,
    source: str,
    level: float | None = None,
):
    """`fast` at its chosen step for `metric` reaches `level` of it (default: LEVEL_RULE's)
    in fewer steps than `slow` at its own, on the evaluation seeds (per-seed ratio of steps,
    geometric mean).
    A run that never reaches the level is timed at the budget; that, or a best step at the
    edge of the grid tried, leaves inconclusive the one verdict it could overturn
    (`TIMED_AT_BUDGET`, `AT_EDGE`) and lets the other stand. A run that never reaches it and
    ends frozen at float64's floor (`frozen_at_end`) is timed by float64, not by the method:
    its true time lies anywhere from where it froze on, which leaves inconclusive a verdict
    that changes between those ends (`frozen_could_overturn`); a level of 0 is reached only
    by rounding (`FLOAT_LEVEL`): the part is not applicable, out of the family. No evaluation
    runs at a chosen step: a failed precondition. The part's evidence names what it timed
    ("timed": slow, fast, metric)."""
    chosen = {m: tuned.chosen(m, metric) for m in (slow, fast)}
    if level is None:
        level = max(half_budget_value(tuned.selection[m][c], metric) for m, c in chosen.items())
    rates = f"{slow} at {tuned.step_label(slow, metric)} over {fast} at " + tuned.step_label(
        fast, metric
    )
    rule = Rule(f"steps to reach {label} ≤ {level:.3g}: {rates}", ">", 1.0, source, 1.0)
    text = f"{fast} reaches {label} ≤ {level:.3g} sooner than {slow}, each at its tuned step"
    timed = [slow, fast, metric]
    if level <= 0:  # not a level the methods can be timed at: not applicable, out of the family
        return Claim(text, None, {"not_applicable": FLOAT_LEVEL, "level": level, "timed": timed})
    missing = [m for m in (slow, fast) if chosen[m] not in tuned.evaluation[m]]
    if missing or not np.isfinite(level):
        unmet = [f"no evaluation runs of {m} at its chosen step" for m in missing]
        unmet += [] if np.isfinite(level) else ["no finished selection runs to set the level"]
        evidence = {"level": level, "timed": timed}
        return Claim(text, rule=rule, effect=None, unmet=unmet, evidence=evidence)
    runs = {m: tuned.evaluation[m][chosen[m]] for m in (slow, fast)}
    a, b = paired(runs[slow], runs[fast], steps_to_reach(runs[slow], metric, level),
                  steps_to_reach(runs[fast], metric, level))  # fmt: skip
    frozen = paired(runs[slow], runs[fast], frozen_at_end(runs[slow], metric),
                    frozen_at_end(runs[fast], metric))  # fmt: skip
    freeze = paired(runs[slow], runs[fast], frozen_from(runs[slow], metric),
                    frozen_from(runs[fast], metric))  # fmt: skip
    budget = float(runs[slow].steps[-1])
    effect = ratio_effect(np.minimum(a, budget), np.minimum(b, budget))
    would = interval_would(effect)
    stopped_pairs = (frozen[0] & ~np.isfinite(a), frozen[1] & ~np.isfinite(b))
    in_doubt = frozen_could_overturn(np.minimum(a, budget), np.minimum(b, budget),
                                     stopped_pairs, freeze, budget, would)  # fmt: skip
    unmet = untimed(a, b, effect) if effect.n else [
        f"no finished run of both {slow} and {fast} to time"]  # fmt: skip
    for role, m, times, stopped in (("slow", slow, a, frozen[0]), ("fast", fast, b, frozen[1])):
        late = int(np.sum(~np.isfinite(times)))
        if late and would == TIMED_AT_BUDGET[role]:
            unmet.append(f"{late} of {times.size} {m} runs never reach the level in "
                         f"{budget:g} steps: timed at the budget, they could overturn what "
                         f"the interval {would}; runs long enough for every {m} run to reach "
                         "it would decide it")  # fmt: skip
        if (stuck := int(np.sum(stopped & ~np.isfinite(times)))) and in_doubt:
            unmet.append(f"{stuck} of {times.size} {m} runs never reach the level and end "
                         "frozen (one float64 value at the last two recorded steps: the run "
                         "stopped, or its metric sits at its float64 floor, as a loss at L* "
                         "does): timed at the budget by float64, they could have reached it "
                         "at any step from where they froze, which could overturn the "
                         "verdict; arithmetic that does not stop there (not implemented) "
                         "would decide it")  # fmt: skip
        if would == AT_EDGE[role] and (doubt := edge_doubt(tuned, m, metric, would)):
            unmet.append(doubt)
    a, b = np.minimum(a, budget), np.minimum(b, budget)
    return Claim(
        text,
        rule=rule,
        effect=effect,
        unmet=unmet,
        evidence={"level": level, "timed": timed, **described({slow: a, fast: b})},
    )


def tuned_comparison(
    tuned: Tuned,
    pairs,
    metrics: dict[str, str],
    text: str,
    source: str,
    profiled: Collection[str] = (),
):
    """For each (slow, fast) pair and each metric (metric → its label): `fast` is sooner
    (`tuned_sooner`), the parts judged as one family (Holm); for the metrics in `profiled`, at
    each level of the profile (`profile_levels`: where along the run each is ahead), one part
    a level."""
    parts = [
        tuned_sooner(tuned, slow, fast, metric, label, source, level)
        for slow, fast in pairs
        for metric, label in metrics.items()
        for level in (profile_levels(tuned, slow, fast, metric) if metric in profiled else [None])
    ]
    evidence = {"score": SCORE, "level": LEVEL_RULE, "chosen_steps": chosen_steps(tuned, metrics)}
    if profiled:
        evidence["profile"] = PROFILE_RULE
    return Claim(text, parts=parts, evidence=evidence)


def chosen_steps(tuned: Tuned, metrics) -> dict:
    """Per method and metric: its chosen step and factor, and the score of every factor."""
    return {
        m: {metric: {"step": tuned.step_label(m, metric), "factor": tuned.chosen(m, metric),
                     "scores": {f"{f:g}": s if math.isfinite(s) else None
                                for f, s in sorted(rate_scores(by, metric,
                                                               tuned.score).items())}}
            for metric in metrics}
        for m, by in tuned.selection.items()
    }  # fmt: skip
