"""Claims of the seed papers and the verdicts our runs give them (docs/CLAIMS.md#reading-a-verdict).

A verdict is a statistic. Each claim states its rule before the data: the quantity measured,
how it is compared with a threshold, the threshold and where that threshold comes from
(`Rule`). The runs give an `Effect`: the quantity's estimate with a 95 % confidence interval
over n independent units (seeds, or runs), computed with scipy.stats. The verdict follows the
interval, not the point estimate:

    supported       the whole interval is on the claim's side of the threshold
    not supported   the whole interval is on the other side
    inconclusive    the interval straddles the threshold, or a precondition of the rule was not
                    met (runs stalled, hit the float floor or a step cap, missed a protocol target)
    not applicable  nothing to compare (one p, one algorithm, a missing group)

Each verdict is recomputed at ½× and 2× its threshold (`sensitivity`); one that changes there is
marked fragile. A claim made of several parts (every p, every data set) holds when every part
does: `Claim(..., parts=[...])`.

This module is also the one vocabulary of verdict statuses.
"""

from __future__ import annotations

import copy
import math
import operator
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
from scipy import stats

SUPPORTED, NOT_SUPPORTED = "supported", "not supported"
INCONCLUSIVE, NOT_APPLICABLE = "inconclusive", "not applicable"
STATUSES = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_APPLICABLE)

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 20241018  # fixed: a verdict is a function of the data, not of the resampling
SENSITIVITY_FACTORS = (0.5, 2.0)

COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


@dataclass(frozen=True)
class Rule:
    """A decision rule stated before the data: `quantity comparison threshold`, e.g.
    "final misalignment, GD over NGD (geometric mean of per-seed ratios)" > 10, with `source`
    saying where 10 comes from (the paper's number, or ours and why).

    `centre` is the value the threshold is a distance from, which the sensitivity check scales:
    0 for a bound on a size or a ratio ("> 10"), the target for a band around one ("slope
    within 0.2 of 1": 0.8 and 1.2 around 1) and 1 for a share that must come close to 1
    ("> 0.99 of the runs": its complement 0.01 is what is halved and doubled).

    `consistency`: the rule is a check of the code or of a mathematical identity, inequality or
    symmetry (it holds on any data), never evidence for a paper's claim; a claim made of such
    rules is listed apart from the paper verdicts (`Claim.consistency`)."""

    quantity: str
    comparison: str
    threshold: float
    source: str
    centre: float = 0.0
    consistency: bool = False

    def __post_init__(self):
        if self.comparison not in COMPARISONS:
            raise ValueError(
                f"Rule.comparison must be one of {tuple(COMPARISONS)}, got {self.comparison!r}"
            )
        if not math.isfinite(self.threshold):
            raise ValueError(f"Rule.threshold must be finite, got {self.threshold!r}")
        if not math.isfinite(self.centre):
            raise ValueError(f"Rule.centre must be finite, got {self.centre!r}")
        if not isinstance(self.consistency, bool):
            raise TypeError(f"Rule.consistency must be a bool, got {self.consistency!r}")

    def holds(self, value: float) -> bool:
        """Does `value` satisfy the rule? NaN satisfies nothing."""
        return bool(COMPARISONS[self.comparison](value, self.threshold))

    def at(self, factor: float) -> Rule:
        """The same rule with the threshold's distance from `centre` scaled by `factor`."""
        return replace(self, threshold=self.centre + (self.threshold - self.centre) * factor)

    @property
    def text(self) -> str:
        return f"{self.quantity} {self.comparison} {self.threshold:g}"


@dataclass(frozen=True)
class Effect:
    """An estimate with its confidence interval [low, high] (95 % unless `confidence` says
    otherwise) over n units (`unit`: "seeds", "runs", "paired seeds", …) and how the interval
    was computed (`method`). The constructors below also know how to recompute the interval at
    another confidence (`at_confidence`), which Holm's correction needs."""

    estimate: float
    low: float
    high: float
    n: int
    method: str
    unit: str = "seeds"
    confidence: float = CONFIDENCE

    def __post_init__(self):
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"Effect.confidence must be in (0, 1), got {self.confidence!r}")

    @property
    def text(self) -> str:
        return f"{self.estimate:.4g} [{self.low:.4g}, {self.high:.4g}] (n = {self.n} {self.unit})"

    def at_confidence(self, level: float) -> Effect | None:
        """The same estimate with its interval at confidence `level`, recomputed from the
        units by the constructor that made it (scipy.stats again); None for an Effect built by
        hand from numbers alone, which cannot be. A point, an unbounded or a missing interval
        is the same at every level."""
        if not 0.0 < level < 1.0:
            raise ValueError(f"at_confidence: level must be in (0, 1), got {level!r}")
        if level == self.confidence:
            return self
        if self.low == self.high or not (math.isfinite(self.low) and math.isfinite(self.high)):
            return replace(self, confidence=level)
        remake = self.__dict__.get("remake")  # set by the constructors (`remade_by`)
        if remake is None:
            return None
        levels = self.__dict__.setdefault("levels", {})  # a bootstrap is worth keeping
        if level not in levels:
            levels[level] = remake(level)
        return levels[level]


def _at_level(make: Callable[..., Effect], args: tuple, kwargs: dict, level: float) -> Effect:
    return make(*args, **kwargs, confidence=level)


def remade_by(effect: Effect, make: Callable[..., Effect], *args, **kwargs) -> Effect:
    """`effect`, told that `make(*args, **kwargs, confidence=level)` recomputes it at another
    confidence (`Effect.at_confidence`); for constructors of effects outside this module."""
    # outside the fields: a summary stores the numbers, not how to remake them
    effect.__dict__["remake"] = partial(_at_level, make, args, kwargs)
    return effect


def decide(rule: Rule, effect: Effect | None, unmet: Sequence[str] = ()) -> str:
    """The verdict of `rule` on `effect`: supported / not supported when the whole confidence
    interval is on one side of the threshold, else inconclusive; inconclusive too when a
    precondition is unmet or nothing finite was measured."""
    if unmet or effect is None or effect.n == 0 or math.isnan(effect.estimate):
        return INCONCLUSIVE
    low, high = rule.holds(effect.low), rule.holds(effect.high)
    if low and high:
        return SUPPORTED
    if not low and not high and not (math.isnan(effect.low) or math.isnan(effect.high)):
        return NOT_SUPPORTED
    return INCONCLUSIVE


def combine(statuses: Sequence[str]) -> str:
    """The verdict of a claim that needs all its parts: not supported if any part is, supported
    if all are, not applicable if there are none, else inconclusive."""
    statuses = [s for s in statuses if s != NOT_APPLICABLE]
    if not statuses:
        return NOT_APPLICABLE
    if NOT_SUPPORTED in statuses:
        return NOT_SUPPORTED
    return SUPPORTED if all(s == SUPPORTED for s in statuses) else INCONCLUSIVE


def combine_some(statuses: Sequence[str]) -> str:
    """The verdict of a claim that needs one of its parts ("at some setting"): supported if
    any part is, not supported if all are not, not applicable if there are none, else
    inconclusive."""
    statuses = [s for s in statuses if s != NOT_APPLICABLE]
    if not statuses:
        return NOT_APPLICABLE
    if SUPPORTED in statuses:
        return SUPPORTED
    return NOT_SUPPORTED if all(s == NOT_SUPPORTED for s in statuses) else INCONCLUSIVE


def decide_between(rule: Rule, effect: Effect | None, support: float, refute: float) -> str:
    """`decide` with the interval at confidence `support` for "supported" and at `refute` for
    "not supported" (Holm's levels for a part of a claim; both 95 % alone). An interval that
    cannot be recomputed at a level decides nothing there."""
    if effect is None or effect.n == 0 or math.isnan(effect.estimate):
        return INCONCLUSIVE
    at = effect.at_confidence(support)
    if at is not None and decide(rule, at) == SUPPORTED:
        return SUPPORTED
    at = effect.at_confidence(refute)
    if at is not None and decide(rule, at) == NOT_SUPPORTED:
        return NOT_SUPPORTED
    return INCONCLUSIVE


@dataclass
class Judgement:
    """A claim's verdict with the confidence levels its support and refutation were judged at,
    the size of the Holm family that set them (1: none) and its parts' judgements."""

    status: str
    support: float = CONFIDENCE
    refute: float = CONFIDENCE
    family: int = 1
    parts: list[Judgement] = field(default_factory=list)


def holm_step_down(candidates: Sequence[int], k: int, alpha: float, reaches) -> dict:
    """Holm's step-down on a family of k hypotheses at level alpha, by intervals: the
    candidates (indices) `reaches(i, confidence)` decides at confidence 1 − alpha/(k − j),
    j being how many were decided before, repeated until a round decides none. Returns the
    decided indices with what `reaches` returned for each (a Judgement, None if not reached)."""
    decided: dict = {}
    while len(decided) < len(candidates):
        level = 1.0 - alpha / (k - len(decided))
        hits = {i: j for i in candidates if i not in decided and (j := reaches(i, level))}
        if not hits:
            break
        decided.update(hits)
    return decided


def judge(
    claim: Claim, factor: float, support=CONFIDENCE, refute=CONFIDENCE, family: int = 1
) -> Judgement:
    """The claim's verdict with every threshold scaled by `factor`, "supported" judged at
    confidence `support` and "not supported" at `refute`. The parts of a claim are a family:
    a claim needing every part is refuted when one part is, so the refutations are corrected
    by Holm (the part most clearly refuted at 1 − α/k, the next at 1 − α/(k − 1), …), while
    "supported" needs every part and takes no correction (an intersection–union test); a claim
    needing some part (`any_part`) the other way round. `family`: the number of hypotheses the
    levels were corrected for above this claim (nested families multiply: 2 data sets of 16
    parts each are 32)."""
    if claim.parts:
        parts = [judge(p, factor, support, refute, family) for p in claim.parts]
        members = [i for i, j in enumerate(parts) if j.status != NOT_APPLICABLE]
        if len(members) > 1:
            corrected = _holm_parts(claim, factor, parts, members, support, refute, family)
            parts = [corrected.get(i, j) for i, j in enumerate(parts)]
        statuses = [j.status for j in parts]
        status = (combine_some if claim.any_part else combine)(statuses)
        if claim.unmet:  # a failed precondition of the whole claim outranks any part
            status = INCONCLUSIVE
        return Judgement(status, support, refute, family, parts)
    if claim.rule is not None:
        unmet = claim.unmet if factor == 1.0 else claim.unmet_at.get(f"{factor:g}x", claim.unmet)
        status = (
            INCONCLUSIVE
            if unmet
            else decide_between(claim.rule.at(factor), claim.effect, support, refute)
        )
        return Judgement(status, support, refute, family)
    return Judgement({True: SUPPORTED, False: NOT_SUPPORTED, None: NOT_APPLICABLE}[claim.supported])


def _holm_parts(claim, factor, parts, members, support, refute, family) -> dict[int, Judgement]:
    """The parts' judgements that Holm's correction changes (by index): for a claim needing
    every part, the parts refuted alone are re-judged at Holm's refutation levels; needing
    some part, those supported alone at Holm's support levels. `family`: as `judge`'s."""
    k, some = len(members), claim.any_part
    target = SUPPORTED if some else NOT_SUPPORTED
    candidates = [i for i in members if parts[i].status == target]  # intervals nest: no other

    def at(i: int, level: float) -> Judgement:
        levels = (level, refute) if some else (support, level)
        return judge(claim.parts[i], factor, *levels, family=k * family)

    def reaches(i: int, level: float) -> Judgement | None:
        return judged if (judged := at(i, level)).status == target else None

    decided = holm_step_down(candidates, k, 1.0 - (support if some else refute), reaches)
    last = 1.0 - (1.0 - (support if some else refute)) / (k - len(decided) or 1)
    return {i: decided[i] if i in decided else at(i, last) for i in candidates}


@dataclass
class Claim:
    """One claim and the verdict the runs give it.

    Measured claims give `rule` and `effect` (and `unmet`: the preconditions of the rule that
    failed, each a short reason); compound claims give `parts`, each a measured Claim, and
    hold when all parts do (`any_part`: when some part does, "at some setting"), the parts
    judged as one family with Holm's correction (`judge`). `supported` (True/False/None) is
    only for claims without a rule — None: nothing to compare, "not applicable". `evidence`
    holds the raw numbers. `correction`: the confidence levels Holm's correction judged this
    part at, where they are not 95 %."""

    claim: str
    supported: bool | None = None
    evidence: dict = field(default_factory=dict)
    id: str = ""  # stable "experiment/slug", set by the experiment (docs/CLAIMS.md links by it)
    rule: Rule | None = None
    effect: Effect | None = None
    unmet: list[str] = field(default_factory=list)
    parts: list[Claim] = field(default_factory=list)
    any_part: bool = False
    # factor label ("0.5x", "2x") → the verdict with the per-case level of ours scaled, for a
    # rule whose threshold has no scale (a count of cases past that level: `no_violations`)
    level_sensitivity: dict[str, str] = field(default_factory=dict)
    # factor label → the preconditions failed with the threshold scaled by it, for a part
    # whose preconditions depend on the threshold (`unmet` is the one at the threshold itself)
    unmet_at: dict[str, list[str]] = field(default_factory=dict)
    status: str = field(init=False)
    sensitivity: dict = field(init=False)
    correction: dict = field(init=False, default_factory=dict)

    def __post_init__(self):
        self.unmet = list(self.unmet)
        kinds = {r.consistency for r in self.rules()}
        if len(kinds) > 1:
            raise ValueError(
                f"Claim {self.claim!r} mixes consistency-check rules with rules for a paper's "
                "claim: list the checks as a claim of their own"
            )
        if not isinstance(self.any_part, bool):
            raise TypeError(f"Claim.any_part must be a bool, got {self.any_part!r}")
        if self.any_part and not self.parts:
            raise ValueError(f"Claim {self.claim!r}: any_part needs parts")
        if self.supported is not None:
            self.supported = bool(self.supported)
        # A part may be another row's claim too (an explanation lists the claims it explains):
        # this claim judges copies, so that row keeps its own verdict.
        self.parts = [copy.deepcopy(part) for part in self.parts]
        # this claim's judgement settles its parts' too (their family is this claim's parts)
        judged = judge(self, 1.0)
        self._record(judged, {f"{f:g}x": judge(self, f) for f in SENSITIVITY_FACTORS})

    def _record(self, judged: Judgement, at: dict[str, Judgement]) -> None:
        self.status = judged.status
        if self.measured:  # readers of `supported` see inconclusive as None, like n/a
            self.supported = {SUPPORTED: True, NOT_SUPPORTED: False}.get(self.status)
        self.correction = (
            {"support": judged.support, "refute": judged.refute, "parts": judged.family}
            if (judged.support, judged.refute) != (CONFIDENCE, CONFIDENCE)
            else {}
        )
        # the interval that decided a corrected part, beside its 95 % one
        level = {SUPPORTED: judged.support, NOT_SUPPORTED: judged.refute}.get(self.status)
        if self.correction and self.effect is not None and level not in (None, CONFIDENCE):
            decided = self.effect.at_confidence(level)
            if decided is not None:
                self.correction["interval"] = [decided.low, decided.high]
        self.sensitivity = self._sensitivity({k: j.status for k, j in at.items()})
        for i, part in enumerate(self.parts):
            part._record(judged.parts[i], {k: j.parts[i] for k, j in at.items()})

    @property
    def measured(self) -> bool:
        return self.rule is not None or bool(self.parts)

    @property
    def consistency(self) -> bool:
        """A check of the code (every rule a consistency check): listed apart, its status is
        never a verdict on a paper's claim."""
        return is_consistency_check(self)

    def status_at(self, factor: float) -> str:
        """The verdict with every threshold scaled by `factor`."""
        return judge(self, factor).status

    def rules(self) -> list[Rule]:
        """Every rule this verdict rests on (its own, or its parts')."""
        own = [self.rule] if self.rule is not None else []
        return own + [r for p in self.parts for r in p.rules()]

    def _sensitivity(self, at: dict[str, str]) -> dict:
        if not self.measured:
            return {}
        if all(r.threshold == r.centre for r in self.rules()):
            if self.level_sensitivity:
                fragile = any(s != self.status for s in self.level_sensitivity.values())
                return {**self.level_sensitivity, "fragile": fragile,
                        "note": "of the per-case level (its count has no scale)"}  # fmt: skip
            return {"fragile": None, "note": "threshold at its centre: no scale to vary"}
        return {**at, "fragile": any(s != self.status for s in at.values())}


def is_consistency_check(claim: Claim | dict) -> bool:
    """Is `claim` (a Claim, or one stored as a dict) a consistency check of the code: measured,
    and every rule it rests on flagged `consistency`?"""
    if isinstance(claim, Claim):
        rules = [rule.consistency for rule in claim.rules()]
    else:
        rules = [bool(leaf["rule"].get("consistency")) for leaf in measured_parts(claim)]
    return bool(rules) and all(rules)


def as_consistency_check(claim: Claim) -> Claim:
    """A copy of `claim` with every rule it rests on flagged a consistency check (`Rule`): for
    a rule that is evidence elsewhere but here checks our own code (two implementations of one
    method agreeing). Its verdict is unchanged; it is listed apart from the paper verdicts."""
    checked = copy.deepcopy(claim)
    todo = [checked]
    while todo:
        leaf = todo.pop()
        if leaf.rule is not None:
            leaf.rule = replace(leaf.rule, consistency=True)
        todo.extend(leaf.parts)
    return checked


def status_of(claim: Claim | dict) -> str:
    """A claim's status (STATUSES); summaries written before claims stored one give it by
    `supported`."""
    if isinstance(claim, Claim):
        return claim.status
    if claim.get("status"):
        return claim["status"]
    return {True: SUPPORTED, False: NOT_SUPPORTED, None: NOT_APPLICABLE}[claim["supported"]]


def paper_verdict(claim: Claim | dict) -> str | None:
    """The claim's verdict on the paper's claim: its status, or None for a consistency check
    of the code, whose status says whether the code passed it and nothing about a paper."""
    return None if is_consistency_check(claim) else status_of(claim)


# A consistency check's status in words that say nothing about a paper.
CHECK_WORDS = {
    SUPPORTED: "check passes",
    NOT_SUPPORTED: "check fails",
    INCONCLUSIVE: "check inconclusive",
    NOT_APPLICABLE: "not applicable",
}


def verdict_word(claim: Claim | dict) -> str:
    """What a reader is shown for the claim: its paper verdict, or for a consistency check of
    the code "check passes" / "check fails" / "check inconclusive"."""
    status = status_of(claim)
    return CHECK_WORDS[status] if is_consistency_check(claim) else status


def not_applicable(claim: str, why: str, id: str = "") -> Claim:
    return Claim(claim, None, {"not_applicable": why}, id)


def identified(prefix: str, claims: list[Claim], slugs) -> list[Claim]:
    """The claims, each given the id "prefix/slug" (one slug per claim, in order)."""
    slugs = list(slugs)
    if len(slugs) != len(claims):
        raise ValueError(f"{prefix}: {len(claims)} claims but {len(slugs)} ids {slugs}")
    for claim, slug in zip(claims, slugs):
        claim.id = f"{prefix}/{slug}"
    return claims


# --- effects with confidence intervals ----------------------------------------------------------


def with_arm_labels(claim: Claim, labels: dict[str, str]) -> Claim:
    """`claim` with each rule's quantity followed by the label of every arm it names (a whole
    name: "Muon" is not in "Muon-f64"), e.g. "final gap of Muon in spectral, median over
    seeds (Muon at tuned η = 0.0125)": the row prints the setting each arm was judged at. The
    verdicts are untouched (the label is text)."""
    todo = [claim]
    while todo:
        node = todo.pop()
        todo += node.parts
        if node.rule is None:
            continue
        quantity = node.rule.quantity
        named = [n for n in labels if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", quantity)]
        if named:
            text = ", ".join(f"{n} at {labels[n]}" for n in named)
            node.rule = replace(node.rule, quantity=f"{quantity} ({text})")
    return claim


def float_floor_note(values) -> dict:
    """Evidence for values below float64's smallest normal number (2.2e-308; subnormal or 0):
    such a value has reached the floating-point floor. It is below any threshold a rule states
    (the verdict stands), but its interval describes the floor, not the runs' spread."""
    values = np.asarray(values, dtype=np.float64)
    under = int(np.sum(np.abs(values) < np.finfo(np.float64).tiny))
    if not under:
        return {}
    return {"effect_note": f"{under}/{len(values)} runs at float64's floor (below its smallest "
            "normal number): the interval shows the floor, not the runs' spread"}  # fmt: skip


def _finite(values) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64).ravel()
    return values[np.isfinite(values)]


def exact_effect(value: float, *, unit: str = "deterministic run") -> Effect:
    """A quantity of one deterministic computation (a fixed problem from a fixed start): there
    is nothing to resample, so the interval is the value itself."""
    value = float(value)
    return Effect(value, value, value, 1, "deterministic: no sampling", unit)


def bootstrap_effect(
    samples: Sequence,
    statistic: Callable,
    *,
    paired: bool = False,
    unit: str = "seeds",
    confidence: float = CONFIDENCE,
) -> Effect:
    """`statistic(*samples, axis=-1)` (vectorised, like np.mean) of the samples (arrays over
    the same units when paired) with a 95 % bootstrap interval over the units
    (scipy.stats.bootstrap, BCa; the percentile interval where BCa is undefined). One unit: the
    interval is unbounded (no spread to measure); no spread at all (every unit equal): the
    interval is the point."""
    samples = tuple(np.array(s, dtype=np.float64) for s in samples)  # copies: kept to remake
    n = min(len(s) for s in samples)
    method = "paired bootstrap (BCa)" if paired else "bootstrap (BCa)"
    estimate = float(statistic(*samples, axis=-1)) if n else math.nan
    if n == 0 or not math.isfinite(estimate):
        return Effect(estimate, math.nan, math.nan, n, method, unit)
    if n == 1:
        return Effect(estimate, -math.inf, math.inf, n, ONE_UNIT, unit)
    if all(np.ptp(s) == 0 for s in samples):
        return Effect(estimate, estimate, estimate, n, "no spread: every unit equal", unit)
    for kind in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            interval = stats.bootstrap(
                samples,
                statistic,
                n_resamples=BOOTSTRAP_RESAMPLES,
                paired=paired,
                vectorized=True,
                confidence_level=confidence,
                method=kind,
                rng=np.random.default_rng(BOOTSTRAP_SEED),
            ).confidence_interval
        if math.isfinite(interval.low) and math.isfinite(interval.high):
            name = method if kind == "BCa" else method.replace("BCa", "percentile")
            effect = Effect(estimate, float(interval.low), float(interval.high), n, name, unit,
                            confidence)  # fmt: skip
            return remade_by(effect, bootstrap_effect, samples, statistic, paired=paired,
                             unit=unit)  # fmt: skip
    return Effect(estimate, math.nan, math.nan, n, method, unit)


def t_effect(
    values, *, unit: str = "seeds", method: str = "t interval", confidence: float = CONFIDENCE
) -> Effect:
    """The mean of per-unit values with its 95 % Student t interval (scipy.stats.t).
    Means use t, not the bootstrap: with few units a bootstrap interval shrinks to the range of
    the values (three seeds give [min, max], which all three agreeing by chance reaches one
    time in eight), where t widens it by the small-sample quantile. One unit: the interval is
    unbounded; every unit equal: the point."""
    values = np.array(values, dtype=np.float64).ravel()  # a copy: kept to remake the interval
    n = values.size
    estimate = float(np.mean(values)) if n else math.nan
    if n == 0 or not math.isfinite(estimate):
        return Effect(estimate, math.nan, math.nan, n, method, unit)
    if n == 1:
        return Effect(estimate, -math.inf, math.inf, n, ONE_UNIT, unit)
    if np.ptp(values) == 0:
        return Effect(estimate, estimate, estimate, n, "no spread: every unit equal", unit)
    # centred first: moments lose precision on values that agree to many digits
    sem = np.std(values - estimate, ddof=1) / math.sqrt(n)
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * sem
    low, high = estimate - float(half), estimate + float(half)
    effect = Effect(estimate, low, high, n, method, unit, confidence)
    return remade_by(effect, t_effect, values, unit=unit, method=method)


def mean_effect(values, *, unit: str = "seeds") -> Effect:
    """The mean of per-unit values (non-finite ones dropped) with its 95 % t interval."""
    return t_effect(_finite(values), unit=unit)


def clustered_mean_effect(values, clusters, *, unit: str = "seeds") -> Effect:
    """The mean of values whose cases share a unit (`clusters`: one label per value, e.g. the
    seed whose data and W₀ several step sizes or problems share), with a 95 % t interval over
    the per-cluster means: n counts clusters, not cases. Cases of one seed are not
    independent, so a t interval over them all would be too narrow. Of the two correct
    intervals, a cluster bootstrap and t over cluster means, t is chosen for the reason
    `t_effect` gives (with few seeds a bootstrap interval shrinks to the range of the cluster
    means). Every cluster weighs the same, whatever its number of cases; non-finite values
    are dropped, a cluster left with none too."""
    values = np.asarray(values, dtype=np.float64).ravel()
    clusters = np.asarray(clusters).ravel()
    if values.shape != clusters.shape:
        raise ValueError(
            f"clustered_mean_effect: clusters must give one label per value, got "
            f"{clusters.size} labels for {values.size} values"
        )
    keep = np.isfinite(values)
    labels = list(dict.fromkeys(clusters[keep].tolist()))
    means = [float(np.mean(values[keep & (clusters == label)])) for label in labels]
    return t_effect(means, unit=unit, method="t interval over per-cluster means")


def violations_effect(margins, *, unit: str = "steps", clusters=None) -> Effect:
    """A property that must hold at every step (a lemma's inequality), checked at each of N
    steps (or cases): `margins` says by how much it holds there (≥ 0: holds; < 0: violated
    by −margin; NaN: not checked, left out). The estimate is the number of violations; every
    step was checked, so there is no sampling and the interval is the count itself (a share
    above 0.95 would hide a violation that a lemma forbids). The method says "k of N steps
    violate it, largest violation x", or with none how close it came: "0 of N steps violate
    it, largest violation none (smallest margin m)". Judge it with `violations_rule`.
    `clusters` (one seed per case): the cases come from those seeds, so n counts the distinct
    seeds, not the cases, and the method says "k of N pairs in S seeds (in m of them) …"."""
    margins = np.asarray(margins, dtype=np.float64).ravel()
    checked = np.isfinite(margins)
    if clusters is not None:
        _, clusters = cases_and_clusters("violations_effect", margins, clusters)
        clusters = clusters[checked]
    margins = margins[checked]
    violated = margins[margins < 0]
    largest = f"largest violation {-float(violated.min()):.3g}" if violated.size else (
        f"largest violation none (smallest margin {float(margins.min()):.3g})"
        if margins.size else "largest violation none")  # fmt: skip
    count = float(violated.size)
    if clusters is None:
        method = f"{violated.size} of {margins.size} {unit} violate it, {largest}"
        return Effect(count, count, count, int(margins.size), method, unit)
    seeds = len(set(clusters.tolist()))
    in_seeds = len(set(clusters[margins < 0].tolist()))
    method = (
        f"{violated.size} of {margins.size} {unit} in {seeds} seeds (in {in_seeds} of them) "
        f"violate it, {largest}"
    )
    return Effect(count, count, count, seeds, method, "seeds")


def cases_and_clusters(caller: str, holds, clusters) -> tuple[np.ndarray, np.ndarray]:
    """`holds` as a flat boolean array and `clusters` as a flat array of one label per case;
    ValueError naming `caller` when their numbers differ."""
    holds = np.asarray(holds, dtype=bool).ravel()
    clusters = np.asarray(clusters).ravel()
    if holds.shape != clusters.shape:
        raise ValueError(
            f"{caller}: clusters must give one label per case, got {clusters.size} labels "
            f"for {holds.size} cases"
        )
    return holds, clusters


def failures_effect(holds, clusters, *, case: str = "starts", fails: str = "fail") -> Effect:
    """A universal property checked case by case (every start of a claim about any start):
    the number of cases where it fails. Every case was checked, so there is no sampling and
    the interval is the count (a share above 0.9 would pass a tenth of the cases failing); n
    counts the seeds the cases come from (`clusters`, independent). The method says "k of N
    starts fail (in m of S seeds)". Judge it with `violations_rule`: one failure refutes."""
    holds, clusters = cases_and_clusters("failures_effect", holds, clusters)
    seeds, failed = len(set(clusters.tolist())), int(np.sum(~holds))
    in_seeds = len(set(clusters[~holds].tolist()))
    method = f"{failed} of {holds.size} {case} {fails} (in {in_seeds} of {seeds} seeds)"
    return Effect(float(failed), float(failed), float(failed), seeds, method, "seeds")


def violations_rule(quantity: str, source: str, *, consistency: bool = False) -> Rule:
    """The rule for `violations_effect`: no step violates `quantity` (the property)."""
    return Rule(f"{quantity}: violations", "<=", 0.0, source, consistency=consistency)


def median_effect(values, *, unit: str = "seeds") -> Effect:
    """The median of per-unit values with its 95 % bootstrap CI."""
    return bootstrap_effect((_finite(values),), np.median, unit=unit)


def _paired(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired samples must have equal lengths, got {a.size} and {b.size}")
    keep = np.isfinite(a) & np.isfinite(b)
    return a[keep], b[keep]


def paired_difference(a, b, *, unit: str = "paired seeds") -> Effect:
    """mean(a − b) over units that share a seed (data and initialisation), 95 % paired t
    interval."""
    a, b = _paired(a, b)
    return t_effect(a - b, unit=unit, method="paired t interval")


def difference_of_means(a, b, *, unit: str = "seeds", confidence: float = CONFIDENCE) -> Effect:
    """mean(a) − mean(b) of independent samples, 95 % Welch t interval (scipy.stats.ttest_ind,
    unequal variances); n is the smaller sample."""
    a, b = _finite(a), _finite(b)
    method = "Welch t interval"
    n = min(a.size, b.size)
    if n == 0:
        return Effect(math.nan, math.nan, math.nan, 0, method, unit)
    estimate = float(np.mean(a) - np.mean(b))
    if a.size < 2 or b.size < 2:
        return Effect(estimate, -math.inf, math.inf, n, ONE_UNIT, unit)
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return Effect(estimate, estimate, estimate, n, "no spread: every unit equal", unit)
    interval = stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence)
    effect = Effect(estimate, float(interval.low), float(interval.high), n, method, unit,
                    confidence)  # fmt: skip
    return remade_by(effect, difference_of_means, a, b, unit=unit)


def ratio_effect(a, b, *, unit: str = "paired seeds", confidence: float = CONFIDENCE) -> Effect:
    """How many times a is b: the geometric mean of the per-unit ratios a/b (values > 0), with
    a 95 % paired t interval of the mean log ratio, mapped back. Orders of magnitude are
    compared on a log scale, so one extreme seed does not decide."""
    a, b = _paired(a, b)
    keep = (a > 0) & (b > 0)
    logs = np.log(a[keep]) - np.log(b[keep])
    effect = t_effect(logs, unit=unit, method="paired t interval", confidence=confidence)
    ratio = Effect(
        _exp(effect.estimate) if effect.n else math.nan,
        _exp(effect.low),
        _exp(effect.high),
        effect.n,
        f"geometric mean ratio, {effect.method} of log ratios",
        unit,
        confidence,
    )
    return remade_by(ratio, ratio_effect, a, b, unit=unit)


def _exp(x: float) -> float:
    """e**x; inf past float64's range (a ratio of a diverged run), NaN for NaN."""
    with np.errstate(over="ignore"):
        return float(np.exp(x))


def proportion_effect(
    successes: int, n: int, *, unit: str = "runs", confidence: float = CONFIDENCE
) -> Effect:
    """A fraction k/n with its exact (Clopper–Pearson) 95 % interval (scipy.stats.binomtest)."""
    if n == 0:
        return Effect(math.nan, math.nan, math.nan, 0, "Clopper–Pearson", unit)
    interval = stats.binomtest(int(successes), int(n)).proportion_ci(confidence, "exact")
    low, high = float(interval.low), float(interval.high)
    effect = Effect(successes / n, low, high, n, "Clopper–Pearson", unit, confidence)
    return remade_by(effect, proportion_effect, successes, n, unit=unit)


def clustered_proportion_effect(
    holds, clusters, *, unit: str = "seeds", confidence: float = CONFIDENCE
) -> Effect:
    """The share of cases where a property holds, the cases of one cluster (a seed: its data
    and W₀) not independent: the pooled share Σk/Σm with a cluster bootstrap interval that
    resamples whole clusters (scipy.stats.bootstrap over the per-cluster (k, m), BCa, else
    percentile); n counts clusters. One case per cluster: the exact Clopper–Pearson interval.
    Every cluster with the same share (all held, say): resampling clusters shows no spread,
    so the interval is Clopper–Pearson over the clusters, each one unit (conservative, as if
    its cases were one)."""
    holds, clusters = cases_and_clusters("clustered_proportion_effect", holds, clusters)
    labels = list(dict.fromkeys(clusters.tolist()))
    k = np.array([holds[clusters == label].sum() for label in labels], dtype=np.float64)
    m = np.array([np.sum(clusters == label) for label in labels], dtype=np.float64)
    if len(labels) == 0 or np.all(m == 1):
        return proportion_effect(int(k.sum()), len(labels), unit=unit, confidence=confidence)
    shares = k / m
    if np.ptp(shares) == 0:
        held = round(float(shares[0]) * len(labels))
        effect = proportion_effect(held, len(labels), unit=unit, confidence=confidence)
        method = "Clopper–Pearson over clusters (no spread between them)"
    else:
        effect = bootstrap_effect((k, m), _pooled_share, paired=True, unit=unit,
                                  confidence=confidence)  # fmt: skip
        method = effect.method.replace("paired", "cluster")
    return remade_by(replace(effect, method=method), clustered_proportion_effect, holds,
                     clusters, unit=unit)  # fmt: skip


def _pooled_share(k, m, axis=-1):
    return np.sum(k, axis=axis) / np.sum(m, axis=axis)


def slope_effect(x, y, *, unit: str = "points", confidence: float = CONFIDENCE) -> Effect:
    """The least-squares slope of y on x with its 95 % t interval (scipy.stats.linregress);
    for one fitted line (a per-seed slope's spread is `mean_effect` of the slopes)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 3 or np.ptp(x) == 0:
        return Effect(math.nan, math.nan, math.nan, int(x.size), "least squares", unit)
    fit = stats.linregress(x, y)
    half = stats.t.ppf(0.5 + confidence / 2, x.size - 2) * fit.stderr
    effect = Effect(
        float(fit.slope), float(fit.slope - half), float(fit.slope + half), int(x.size),
        "least squares, t interval", unit, confidence,
    )  # fmt: skip
    return remade_by(effect, slope_effect, x, y, unit=unit)


# --- reading a stored verdict (summary.json holds claims as dicts) ------------------------------


def measured_parts(claim: dict) -> list[dict]:
    """The measured parts of a stored claim (itself, when it has a rule), depth first."""
    if claim.get("rule"):
        return [claim]
    return [leaf for part in claim.get("parts") or [] for leaf in measured_parts(part)]


def unmeasured_parts(claim: dict) -> list[dict]:
    """The parts of a compound stored claim that are not applicable (nothing to compare: no
    rule, their reason in evidence.not_applicable), depth first; [] for a claim without parts."""
    found = []
    for part in claim.get("parts") or []:
        if not part.get("rule") and not part.get("parts"):
            found += [part] if "not_applicable" in (part.get("evidence") or {}) else []
        else:
            found += unmeasured_parts(part)
    return found


def _field_error(where: str, field: str, wanted: str, value) -> ValueError:
    return ValueError(f"{where}: {field} is {str(value)[:40]!r}, not {wanted}")


def _check_fields(node: dict, where: str, wanted: dict[str, str]) -> None:
    """ValueError naming the first field of `node` that is not of its kind in `wanted`:
    "number" (int or float, not a bool), "integer" or "text"."""
    kinds = {"number": (int, float), "integer": (int,), "text": (str,)}
    for name, kind in wanted.items():
        value = node.get(name)
        if not isinstance(value, kinds[kind]) or isinstance(value, bool):
            raise _field_error(where, name, f"a {kind}", value)


RULE_FIELDS = {"quantity": "text", "comparison": "text", "threshold": "number", "source": "text"}
EFFECT_FIELDS = {
    "estimate": "number", "low": "number", "high": "number", "n": "integer", "method": "text",
    "unit": "text",
}  # fmt: skip


def decoded(claim):
    """A stored claim (and its parts) with its effects' numbers as they were computed: JSON
    has no NaN or ±inf (`store.finite_json` writes null), so a null estimate is NaN and a null
    bound is ∓inf for one unit (no interval: `ONE_UNIT`) and NaN otherwise. Anything that is
    not a claim's shape is returned as it is, for `check_stored` to name."""
    if not isinstance(claim, dict):
        return claim
    out = dict(claim)
    effect = claim.get("effect")
    if isinstance(effect, dict):
        one_unit = effect.get("method") == ONE_UNIT
        unbounded = {"estimate": math.nan, "low": -math.inf, "high": math.inf}
        out["effect"] = {
            key: (unbounded[key] if one_unit and key != "estimate" else math.nan)
            if key in unbounded and value is None
            else value
            for key, value in effect.items()
        }
    if isinstance(claim.get("parts"), list):
        out["parts"] = [decoded(part) for part in claim["parts"]]
    return out


def decoded_summary(summary):
    """A stored summary with its claims `decoded`; anything else as it is."""
    if isinstance(summary, dict) and isinstance(summary.get("claims"), list):
        return {**summary, "claims": [decoded(claim) for claim in summary["claims"]]}
    return summary


def check_stored(claim, where: str = "claim") -> None:
    """ValueError naming the field (`where`: the claim's place, "claims[3]") if a stored claim
    is not in the shape attnbias writes: a status of STATUSES (or, in summaries from before
    statuses, `supported` True, False or None), an id and reasons of text, a rule and an effect
    with the fields and types the register prints, and parts that are such claims too."""
    if not isinstance(claim, dict):
        raise _field_error(where, "the claim", "a JSON object", claim)
    if "status" in claim or "supported" not in claim:
        if claim.get("status") not in STATUSES:
            statuses = "one of " + ", ".join(STATUSES)
            raise _field_error(where, "status", statuses, claim.get("status"))
    elif not (claim["supported"] is None or isinstance(claim["supported"], bool)):
        raise _field_error(where, "supported", "true, false or null", claim["supported"])
    if not isinstance(claim.get("id", ""), str):
        raise _field_error(where, "id", "text", claim["id"])
    unmet = claim.get("unmet") or []
    if not isinstance(unmet, list) or not all(isinstance(u, str) for u in unmet):
        raise _field_error(where, "unmet", "a list of texts", unmet)
    for name in ("rule", "effect", "sensitivity", "evidence", "correction"):
        if claim.get(name) is not None and not isinstance(claim[name], dict):
            raise _field_error(where, name, "a JSON object", claim[name])
    if claim.get("rule"):
        _check_fields(claim["rule"], f"{where}.rule", RULE_FIELDS)
    if claim.get("effect"):
        _check_fields(claim["effect"], f"{where}.effect", EFFECT_FIELDS)
    parts = claim.get("parts") or []
    if not isinstance(parts, list):
        raise _field_error(where, "parts", "a list", parts)
    for i, part in enumerate(parts):
        check_stored(part, f"{where}.parts[{i}]")


def _effect_text(effect: dict | None) -> str:
    if not effect:
        return "—"
    if effect["low"] == effect["high"] == effect["estimate"]:  # no interval: say why
        return f"{effect['estimate']:.3g} ({effect['method']}), n = {effect['n']} {effect['unit']}"
    return (
        f"{effect['estimate']:.3g} [{effect['low']:.3g}, {effect['high']:.3g}], "
        f"n = {effect['n']} {effect['unit']}"
    )


# Why a measured part is inconclusive, as a kind (`leaf_reason` says it in full); the tally of
# `attnbias reproduce` counts claims by these.
STRADDLES = "CI straddles the threshold"
PRECONDITION = "a precondition failed"
HOLM = "not at Holm's corrected level"
ONE_UNIT = "one unit: no interval"
NO_INTERVAL = "no interval could be computed"
NOTHING_MEASURED = "nothing finite measured"
CAUSES = (STRADDLES, PRECONDITION, HOLM, ONE_UNIT, NO_INTERVAL, NOTHING_MEASURED)


def leaf_cause(leaf: dict) -> str:
    """Why a stored measured part (one with a rule) is inconclusive: one of CAUSES."""
    if leaf.get("unmet"):
        return PRECONDITION
    effect = leaf.get("effect")
    if not effect or not effect["n"] or math.isnan(effect["estimate"]):
        return NOTHING_MEASURED
    low, high = effect["low"], effect["high"]
    if math.isnan(low) or math.isnan(high):
        return NO_INTERVAL
    if math.isinf(low) and math.isinf(high):
        return ONE_UNIT
    if _alone(leaf) != INCONCLUSIVE and leaf.get("correction"):
        return HOLM
    return STRADDLES


def _alone(leaf: dict) -> str:
    """A stored measured part's verdict at 95 %, by itself (no correction)."""
    return decide(Rule(**leaf["rule"]), Effect(**leaf["effect"]))


def leaf_reason(leaf: dict) -> str:
    """Why a stored measured part (one with a rule) is inconclusive, in a few words; for an
    interval that does not clear its threshold, also what would decide it (`what_decides`)."""
    cause = leaf_cause(leaf)
    if cause == PRECONDITION:
        return "; ".join(leaf["unmet"])
    if cause == HOLM:
        alone, correction = _alone(leaf), leaf["correction"]
        level = correction["refute" if alone == NOT_SUPPORTED else "support"]
        return (
            f"{alone} at 95 % alone, not at {100 * level:.4g} %: Holm's correction for "
            f"{correction['parts']} parts; {what_decides(leaf, level)}"
        )
    if cause == STRADDLES:
        return (
            f"the 95 % CI straddles {leaf['rule']['threshold']:g}; {what_decides(leaf, CONFIDENCE)}"
        )
    return cause


# The chance that a rerun with the units `units_to_decide` asks for decides the part.
POWER = 0.8
MOST_UNITS = 10**7  # beyond this, more units are no practical way to decide a part


def units_to_decide(leaf: dict, confidence: float = CONFIDENCE) -> int | None:
    """About how many units (the part's own: seeds, paired seeds, runs) would decide a stored
    measured part whose interval at `confidence` does not clear its threshold: the smallest n
    at which a t test of the estimate against the threshold at `confidence` has power POWER
    (scipy.stats.nct), the spread per unit read off the stored interval's half on the
    threshold's side (a geometric-mean ratio's on the log scale, where it was computed). An
    estimate, not a promise: the spread is assumed to stay as observed. None where no n up to
    MOST_UNITS would: the estimate on the threshold, or no finite interval."""
    rule, effect = leaf["rule"], leaf.get("effect") or {}
    values = [effect.get(k) for k in ("estimate", "low", "high")] + [rule["threshold"]]
    n = effect.get("n") or 0
    if n < 2 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
        return None
    if "geometric mean ratio" in effect.get("method", ""):
        if min(values) <= 0:
            return None
        values = [math.log(v) for v in values]
    estimate, low, high, threshold = values
    half = estimate - low if threshold < estimate else high - estimate
    distance = abs(estimate - threshold)
    if distance == 0 or half <= 0:
        return None
    level = effect.get("confidence", CONFIDENCE)
    tail = 0.5 + level / 2
    quantile = stats.t.ppf(tail, n - 1) if "t interval" in effect.get("method", "") else (
        stats.norm.ppf(tail))  # fmt: skip
    standardised = distance / (half * math.sqrt(n) / quantile)  # distance over the spread

    def power(units: int) -> float:
        critical = stats.t.ppf(0.5 + confidence / 2, units - 1)
        return float(stats.nct.sf(critical, units - 1, standardised * math.sqrt(units)))

    low_n, high_n = 2, 4
    while power(high_n) < POWER:  # doubling, then bisection: power grows with n
        if high_n > MOST_UNITS:
            return None
        low_n, high_n = high_n, 2 * high_n
    while high_n - low_n > 1:
        middle = (low_n + high_n) // 2
        low_n, high_n = (middle, high_n) if power(middle) < POWER else (low_n, middle)
    return high_n


def what_decides(leaf: dict, confidence: float = CONFIDENCE) -> str:
    """What would decide a stored part whose interval at `confidence` does not clear its
    threshold, for its reason: about how many units (`units_to_decide`), or that more units
    alone would not."""
    effect = leaf.get("effect") or {}
    unit, now = effect.get("unit", "units"), effect.get("n", 0)
    units = units_to_decide(leaf, confidence)
    if units is None:
        return (
            f"more {unit} alone would not decide it (the estimate lies on the threshold or "
            "has no finite interval): a longer run or another design would"
        )
    return (
        f"about {units:,} {unit} would decide it ({100 * POWER:.0f} % power at the observed "
        f"spread, n = {now} now)"
    )


def _part_reasons(claim: dict, leaf_says=leaf_reason, unmet_says=list) -> list[str]:
    """What `leaf_says` of each inconclusive measured part, and `unmet_says` of the failed
    preconditions of each inconclusive compound part, depth first."""
    reasons = []
    for part in claim.get("parts") or []:
        if status_of(part) != INCONCLUSIVE:
            continue
        if part.get("rule"):
            reasons.append(leaf_says(part))
        else:
            unmet = part.get("unmet") or []
            reasons += [*unmet_says(unmet), *_part_reasons(part, leaf_says, unmet_says)]
    return reasons


def reasons(claim: dict) -> list[str]:
    """Why a stored claim is inconclusive: its own failed preconditions, then each distinct
    reason of its inconclusive parts with how many of its measured parts give it ("has not
    converged (2 of 4 parts)"). Empty unless the claim is inconclusive."""
    if status_of(claim) != INCONCLUSIVE:
        return []
    if claim.get("rule"):
        return [leaf_reason(claim)]
    found = [*(claim.get("unmet") or [])]
    parts = _part_reasons(claim)
    k = len(measured_parts(claim))
    for reason in dict.fromkeys(parts):
        found.append(reason if k == 1 else f"{reason} ({parts.count(reason)} of {k} parts)")
    return found


def causes(claim: dict) -> list[str]:
    """Why a stored claim is inconclusive, as kinds (CAUSES, each once, in the order of
    `reasons`); empty unless the claim is inconclusive."""
    if status_of(claim) != INCONCLUSIVE:
        return []
    if claim.get("rule"):
        return [leaf_cause(claim)]
    found = [PRECONDITION] if claim.get("unmet") else []
    found += _part_reasons(claim, leaf_cause, lambda unmet: [PRECONDITION] * bool(unmet))
    return list(dict.fromkeys(found))


def _on_claims_side(leaf: dict) -> bool | None:
    """Does a stored measured part's estimate satisfy its rule? None when nothing finite was
    measured."""
    effect = leaf.get("effect")
    if not effect or not effect["n"] or not math.isfinite(effect["estimate"]):
        return None
    return Rule(**leaf["rule"]).holds(effect["estimate"])


def parts_against(claim: dict) -> list[int] | None:
    """The 1-based positions, among a stored claim's measured parts, of those whose estimate
    lies against the claim (its rule does not hold at the estimate), where others lie on its
    side: the parts point both ways (one measure or level for the claim, another against it,
    whatever their intervals say); None when they do not."""
    sides = [_on_claims_side(leaf) for leaf in measured_parts(claim)]
    against = [i + 1 for i, side in enumerate(sides) if side is False]
    return against if against and True in sides else None


def verdict_text(claim: dict) -> str:
    """The verdict in words (`verdict_word`) with its reasons in brackets when inconclusive;
    where its parts point both ways (`parts_against`), which lie against the claim; and where
    it was looked at before (its evidence's `earlier_looks`), each earlier look's verdict."""
    why = reasons(claim)
    text = verdict_word(claim) + (f" ({'; '.join(why)})" if why else "")
    against = parts_against(claim)
    if against:
        k = len(measured_parts(claim))
        text += (f" [its parts point both ways: the estimates of part{'s' * (len(against) > 1)} "
                 f"{', '.join(map(str, against))} of {k} lie against the claim, the others on "
                 "its side]")  # fmt: skip
    looks = (claim.get("evidence") or {}).get("earlier_looks")
    if looks:
        text += (" [earlier looks, each judged alone and stored with the row: "
                 + "; ".join(f"{seeds}: {look['verdict']}" for seeds, look in looks.items())
                 + "]")  # fmt: skip
    return text


def sensitivity_text(claim: dict) -> str:
    """The sensitivity column: robust, fragile (and where), or why there is none; a verdict
    left inconclusive by a failed precondition is not called robust (no threshold decided it)."""
    sensitivity = claim.get("sensitivity") or {}
    if not measured_parts(claim):
        return "—"
    if status_of(claim) == INCONCLUSIVE and _has_unmet(claim):
        return "— (inconclusive: precondition)"
    if sensitivity.get("fragile") is None:
        return sensitivity.get("note", "—")
    of = f" {sensitivity['note']}" if sensitivity.get("note") else ""
    if sensitivity["fragile"]:
        changed = [f"{k}: {v}" + _scaled_reasons(claim, k, v)
                   for k, v in sensitivity.items() if k.endswith("x")]  # fmt: skip
        return "fragile (" + ", ".join(changed) + ")" + of
    return "robust at ½× and 2×" + of


def _scaled_reasons(claim: dict, factor: str, status: str) -> str:
    """Why a stored claim is inconclusive with its thresholds scaled by `factor` ("0.5x"),
    where a precondition asked again there failed (`Claim.unmet_at`)."""
    if status != INCONCLUSIVE:
        return ""
    reasons = [r for leaf in measured_parts(claim) for r in (leaf.get("unmet_at") or {}).get(
        factor, [])]  # fmt: skip
    return f" ({'; '.join(dict.fromkeys(reasons))})" if reasons else ""


def _deciding_interval_text(leaf: dict) -> str:
    """A part Holm's correction decided at a level other than 95 %: the interval at it."""
    correction = leaf.get("correction") or {}
    if "interval" not in correction:
        return ""
    level = correction["refute" if status_of(leaf) == NOT_SUPPORTED else "support"]
    low, high = correction["interval"]
    return (f"; at Holm's {100 * level:.4g} % ({correction['parts']} parts): "
            f"[{low:.4g}, {high:.4g}]")  # fmt: skip


def _has_unmet(claim: dict) -> bool:
    return bool(claim.get("unmet")) or any(_has_unmet(p) for p in claim.get("parts") or [])


def verdict_columns(claim: dict) -> dict[str, str]:
    """A stored claim as the register's columns: rule, threshold source, effect (estimate,
    95 % CI, n), verdict and sensitivity; one line per part of a compound claim, each with its
    verdict and, when inconclusive, why."""
    leaves = measured_parts(claim)
    sources = list(dict.fromkeys(leaf["rule"]["source"] for leaf in leaves))
    # parts with nothing to compare are listed too, each with its reason, after the measured
    # ones (outside the family: they neither support nor refute)
    idle = unmeasured_parts(claim) if leaves else []
    return {
        "rule": "<br>".join(
            [f"{leaf['rule']['quantity']} {leaf['rule']['comparison']} "
             f"{leaf['rule']['threshold']:g}" for leaf in leaves]
            + [part["claim"] for part in idle]
        )
        or "—",
        "source": "<br>".join(sources) or "—",
        "effect": "<br>".join(
            [_effect_text(leaf.get("effect")) + _deciding_interval_text(leaf)
             + (f" ({leaf['evidence']['effect_note']})"
                if "effect_note" in (leaf.get("evidence") or {}) else "")
             + (f" → {verdict_text(leaf)}" if len(leaves) > 1 else "")
             for leaf in leaves]
            + [f"— → not applicable ({part['evidence']['not_applicable']})" for part in idle]
        )
        or "—",
        "verdict": verdict_text(claim),
        "sensitivity": sensitivity_text(claim),
    }  # fmt: skip
