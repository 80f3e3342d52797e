"""Claim rules of the theory's rates and conditions (docs/theory.md#rates-measured): fitted
exponents against the bounds of the NGD paper's Theorems 1, 3 and 7 and the MD paper's rate,
the norm growth of Eq. 12 against the step size, Lemma 1's saturation rate against the margin,
the trajectory lemmas (5, 6, 13) and global versus local convergence.

The papers' formulas were lost in extraction; where a value below is derived rather than read,
its comment says how (docs/theory.md#rates-measured gives the derivations in full). Each rule
takes per-run numbers (fitted exponents, ratios, counts) measured by the experiments.
"""

from __future__ import annotations

import numpy as np

from ...theory_measures import span
from ..claims import (
    SENSITIVITY_FACTORS,
    Claim,
    Rule,
    clustered_mean_effect,
    clustered_proportion_effect,
    failures_effect,
    mean_effect,
    ratio_effect,
    violations_effect,
    violations_rule,
)

# --- the theory's values (each derived where the formula was lost; see the module docstring)

# NGD paper Thm 1 (and Thm 7 for Polyak): Lemma 2 holds with ε ∝ 1/‖W_t‖ once ‖W_t‖ ≥ R_ε,
# Eq. 12 gives ‖W_t‖ ≥ cηt, and telescoping the aligned increments gives
# 1 − ⟨Ŵ_t, Ŵ_mm⟩ = O(log t / t) (thm1_order): a power −1 times a log factor. The rules compare
# a fitted exponent with the order's own exponent over the same window
# (theory_measures.order_exponent).
THM1_MISALIGNMENT_EXPONENT = -1.0
# Ours, derived: once the direction settles, W_t = ‖W_t‖Ŵ_mm + a bounded residual (as for NGD
# on linearly separable data), so ‖Ŵ_t − Ŵ_mm‖ ∝ 1/t and 1 − cos θ = ‖Ŵ_t − Ŵ_mm‖²/2 ∝ t^-2.
NGD_ASYMPTOTIC_EXPONENT = -2.0
# Eq. 12: ‖W_t‖ ≤ ‖W₀‖ + ηt (each step has length η), so the late slope of ‖W_t‖ in t over η
# is at most 1; it tends to 1 as the step turns parallel to W_t.
EQ12_SLOPE_OVER_LR = 1.0
# Lemma 1: 1 − s_opt decays like exp(−‖W_t‖ γ*) once W_t points along W_mm (every support
# token's logit gap is ‖W_t‖/‖W_mm‖, margin γ* = 1/‖W_mm‖): the rate in ‖W_t‖ over γ* is 1,
# and across problems the rate is proportional to the margin (log–log slope 1).
LEMMA1_RATE_OVER_MARGIN = 1.0
# NGD paper Thm 3 (joint training with the loss-normalised steps of Eq. 13): ‖W_t‖ grows only
# logarithmically, and the rate is "comparable to linear models trained with standard GD"
# (Soudry et al.: the *distance* ‖Ŵ_t − Ŵ_mm‖ within O(log log t / log t)); 1 − cos θ is half
# the squared distance, so it falls at least like the square (polylog_misalignment_order).
THM3_POLYLOG_EXPONENT = -1.0
# NGD paper Thm 4: v's margin on the optimal tokens is asymptotically "a constant factor" of
# the max margin 1/‖v_mm‖; the factor was lost: 1/2 is our reading of a constant far from 0.
THM4_MARGIN_FRACTION = 0.5
# MD paper, plain ℓp-AttGD: a rate "comparable to GD in simpler models" (Soudry et al.: the
# direction within O(log log t / log t)); D_ψ(Ŵ_mm, Ŵ_t) is locally half a squared distance
# (exactly so for p = 2), so it too falls at least like the square of that order.
MD_POLYLOG_EXPONENT = -1.0
# Thm 3 and the MD rate carry Soudry et al.'s log log t factor (polylog_order, a distance).


def thm1_order(t):
    """Thm 1's (and Thm 7's) order of 1 − cos θ: log t · t^THM1_MISALIGNMENT_EXPONENT."""
    t = np.asarray(t, dtype=np.float64)
    return np.log(t) * t**THM1_MISALIGNMENT_EXPONENT


def polylog_order(t):
    """Thm 3's and the MD paper's order of a distance ‖Ŵ_t − Ŵ_mm‖:
    log log t · (log t)^MD_POLYLOG_EXPONENT (decreasing only beyond t = e^e)."""
    t = np.asarray(t, dtype=np.float64)
    return np.log(np.log(t)) * np.log(t) ** MD_POLYLOG_EXPONENT


def polylog_misalignment_order(t):
    """The same order for a squared quantity, 1 − cos θ = ‖Ŵ_t − Ŵ_mm‖²/2 or a Bregman
    divergence (docs/theory.md: a distance rate t^(−a) is a misalignment exponent −2a): the
    square of polylog_order."""
    return polylog_order(t) ** 2


def _mean_part(values, quantity, comparison, threshold, source, centre=0.0) -> Claim:
    return Claim(
        "",
        rule=Rule(quantity, comparison, threshold, source, centre),
        effect=mean_effect(values),
    )


def unresolved(values: np.ndarray, what: str) -> list[str]:
    """The precondition that every run gave a finite fit: a run whose values in the window
    fell to the float floor (or stalled) has none."""
    values = np.asarray(values, dtype=np.float64)
    bad = int(np.sum(~np.isfinite(values)))
    return [f"{bad} of {values.size} runs have no finite {what}"] if bad else []


def slower_exponents(slow: str, fast: str, window) -> str:
    """`slower`'s quantity for two arms' misalignment exponents fitted over a window of steps."""
    return (
        f"|fitted exponent of 1 − cos(W_t, W_mm) in t| over steps {span(window)}, {slow} over "
        f"{fast}, per seed"
    )


def exponent_below(
    exponents: np.ndarray, bound: float, text: str, quantity: str, source: str, unmet=()
) -> Claim:
    """A rate bound: the fitted exponent of a decaying quantity, mean over runs, is below
    `bound` (decays at least as fast as t^bound). Runs without a finite fit (float floor,
    stalled) make the verdict inconclusive."""
    exponents = np.asarray(exponents, dtype=np.float64)
    unmet = [*unmet, *unresolved(exponents, "fitted exponent")]
    return Claim(
        text,
        rule=Rule(quantity, "<", bound, source),
        effect=mean_effect(exponents),
        unmet=unmet,
        evidence={"exponents": [float(e) for e in exponents], "bound": bound},
    )


def exponent_matches(
    exponents: np.ndarray, expected: float, tolerance: float, text: str, source: str, unmet=()
) -> Claim:
    """The fitted exponent over its expected value, mean over runs, lies within
    (1 − tolerance, 1 + tolerance)."""
    exponents = np.asarray(exponents, dtype=np.float64)
    ratio = exponents / expected
    quantity = f"fitted exponent over the expected {expected:g}"
    return Claim(
        text,
        parts=[
            _mean_part(ratio, quantity, ">", 1.0 - tolerance, source, centre=1.0),
            _mean_part(ratio, quantity, "<", 1.0 + tolerance, source, centre=1.0),
        ],
        unmet=[*unmet, *unresolved(exponents, "fitted exponent")],
        evidence={"exponents": [float(e) for e in exponents], "expected": expected},
    )


def within_one(quantity: str, tolerance: float, source: str, effect, consistency=False) -> list:
    """The two parts of "within (1 − tolerance, 1 + tolerance) of 1" on one effect."""
    return [
        Claim("", rule=Rule(quantity, op, 1.0 + sign * tolerance, source, 1.0, consistency),
              effect=effect)
        for op, sign in ((">", -1.0), ("<", 1.0))
    ]  # fmt: skip


def window_stable(
    early: np.ndarray, late: np.ndarray, tolerance: float, windows, who: str = ""
) -> Claim:
    """The exponent fitted on the later window over the one fitted on the earlier (per run,
    geometric mean) lies within (1 − tolerance, 1 + tolerance): the fit does not depend on the
    window. Exponents of opposite signs are not a stable rate: the runs that have them make
    the verdict inconclusive. `who`: the algorithm, named in the rule where a claim has one
    such part per algorithm."""
    early, late = np.asarray(early, dtype=np.float64), np.asarray(late, dtype=np.float64)
    same = np.sign(early) == np.sign(late)
    unmet = unresolved(early + late, "fit in both windows")
    if not np.all(same | ~np.isfinite(early + late)):
        unmet.append(f"{int(np.sum(~same))} runs change sign between the windows")
    ratio = ratio_effect(np.abs(late), np.abs(early), unit="seeds")  # one run per seed
    late_span, early_span = (f"{int(w[0]):,}–{int(w[1]):,}" for w in windows[::-1])
    of = f" of {who}" if who else ""
    quantity = f"exponent{of} on steps {late_span} over exponent on {early_span}, per seed"
    source = f"ours: a fit is stable when two windows agree within {tolerance:.0%}"
    return Claim(
        f"The fitted exponent is stable: on steps {late_span} it is within {tolerance:.0%} of the "
        f"one on {early_span}",
        parts=within_one(quantity, tolerance, source, ratio),
        unmet=unmet,
        evidence={"early": [float(e) for e in early], "late": [float(e) for e in late]},
    )


def growth_per_lr(lrs: np.ndarray, slopes: np.ndarray, tolerance: float, clusters) -> Claim:
    """Eq. 12's linear growth: the late slope κ of ‖W_t‖ in t over the step size η is above
    1 − tolerance (the limit is 1: the step turns parallel to W_t). A run whose direction
    kept turning would grow more slowly, so this can fail. Runs of one seed (one problem, one
    W₀, several η) are one cluster: the interval is over seeds, not runs."""
    ratio = np.asarray(slopes, dtype=np.float64) / np.asarray(lrs, dtype=np.float64)
    return Claim(
        f"Eq. 12: ‖W_t‖ grows like ηt: its late slope in t over η is above "
        f"{EQ12_SLOPE_OVER_LR - tolerance:g} at every η",
        rule=Rule(
            "late slope of ‖W_t‖ in t over η, mean over seeds (clustered)",
            ">",
            EQ12_SLOPE_OVER_LR - tolerance,
            f"derived: the limit is {EQ12_SLOPE_OVER_LR:g}; {tolerance:g} below it ours",
            centre=EQ12_SLOPE_OVER_LR,
        ),
        effect=clustered_mean_effect(ratio, clusters),
        unmet=unresolved(ratio, "late slope"),
        evidence={"lr": [float(x) for x in lrs], "slope_over_lr": [float(r) for r in ratio]},
    )


def growth_bound(lrs: np.ndarray, slopes: np.ndarray, clusters) -> Claim:
    """A consistency check of the code, not evidence for the paper: every normalised step has
    length η, so by the triangle inequality ‖W_t‖ ≤ ‖W₀‖ + ηt on any data and the late slope
    over η cannot exceed 1 (Eq. 12's upper bound)."""
    ratio = np.asarray(slopes, dtype=np.float64) / np.asarray(lrs, dtype=np.float64)
    return Claim(
        f"Consistency check (the triangle inequality for steps of length η): the late slope of "
        f"‖W_t‖ in t over η is at most {EQ12_SLOPE_OVER_LR:g}",
        rule=Rule(
            "late slope of ‖W_t‖ in t over η, mean over seeds (clustered)",
            "<=",
            EQ12_SLOPE_OVER_LR,
            "identity: steps of length η give ‖W_t‖ ≤ ‖W₀‖ + ηt (Eq. 12's upper bound)",
            centre=EQ12_SLOPE_OVER_LR,
            consistency=True,
        ),
        effect=clustered_mean_effect(ratio, clusters),
        unmet=unresolved(ratio, "late slope"),
        evidence={"lr": [float(x) for x in lrs], "slope_over_lr": [float(r) for r in ratio]},
    )


def per_cluster_slopes(x: np.ndarray, y: np.ndarray, clusters) -> np.ndarray:
    """Per cluster (seed), the least-squares slope of log y on log x over its cases (NaN for a
    cluster with fewer than 2 distinct finite points)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    members: dict = {}
    for k, key in enumerate(np.asarray(clusters).tolist()):
        members.setdefault(key, []).append(k)
    out = []
    for cases in members.values():
        with np.errstate(divide="ignore", invalid="ignore"):
            lx, ly = np.log(x[cases]), np.log(y[cases])
        keep = np.isfinite(lx) & np.isfinite(ly)
        ok = keep.sum() >= 2 and np.ptp(lx[keep]) > 0
        out.append(np.polyfit(lx[keep], ly[keep], 1)[0] if ok else np.nan)
    return np.array(out)


def proportional(
    x: np.ndarray,
    y: np.ndarray,
    tolerance: float,
    text: str,
    quantity: str,
    source: str,
    clusters,
    consistency: bool = False,
) -> Claim:
    """y ∝ x: per cluster (a seed, whose cases share data or W₀), the slope of log y on log x;
    their mean over clusters is within (1 − tolerance, 1 + tolerance) of 1, so n counts seeds.
    `consistency`: the proportionality holds by construction (a symmetry of the problem), a
    check of the code listed apart from the paper's claims."""
    slopes = per_cluster_slopes(x, y, clusters)
    effect = mean_effect(slopes)
    return Claim(
        text,
        parts=within_one(quantity, tolerance, source, effect, consistency),
        unmet=[*unresolved(y, "value"), *unresolved(slopes, "slope")],
        evidence={"x": [float(v) for v in x], "y": [float(v) for v in y],
                  "slope_per_cluster": [float(v) for v in slopes]},
    )  # fmt: skip


def ratio_near_one(
    ratios: np.ndarray,
    tolerance: float,
    text: str,
    quantity: str,
    source: str,
    clusters,
    consistency: bool = False,
) -> Claim:
    """Measured over predicted, mean over seeds, lies within (1 − tolerance, 1 + tolerance);
    the cases of one seed (several problems or step sizes from one draw) are one cluster, so
    n counts seeds. `consistency`: the prediction follows from what other rows test (a check
    of the code, listed apart)."""
    ratios = np.asarray(ratios, dtype=np.float64)
    effect = clustered_mean_effect(ratios, clusters)
    return Claim(
        text,
        parts=within_one(quantity, tolerance, source, effect, consistency),
        unmet=unresolved(ratios, "ratio"),
        evidence={"ratios": [float(r) for r in ratios]},
    )


def slower(
    slow: np.ndarray,
    fast: np.ndarray,
    text: str,
    source: str,
    unmet=(),
    quantity: str = "|exponent| of the slower over the faster, per seed",
) -> Claim:
    """Per run pair (same seed), the magnitude of `slow`'s fitted exponent over `fast`'s is
    below 1 (geometric mean): `slow` decays more slowly. `unmet`: preconditions that failed
    (a stalled run's exponent of 0 is not a slow rate); `quantity`: the rule's, naming the
    compared arms and the fit window."""
    slow, fast = np.asarray(slow, dtype=np.float64), np.asarray(fast, dtype=np.float64)
    effect = ratio_effect(np.abs(slow), np.abs(fast))
    return Claim(
        text,
        rule=Rule(quantity, "<", 1.0, source, 1.0),
        effect=effect,
        unmet=[*unmet, *unresolved(slow + fast, "fitted exponent pair")],
        evidence={"slow": [float(e) for e in slow], "fast": [float(e) for e in fast]},
    )


def mean_above(values: np.ndarray, level: float, text: str, quantity: str, source: str) -> Claim:
    """The mean over runs of a per-run value exceeds `level`."""
    values = np.asarray(values, dtype=np.float64)
    return Claim(
        text,
        rule=Rule(quantity, ">", level, source),
        effect=mean_effect(values),
        unmet=unresolved(values, "value"),
        evidence={"values": [float(v) for v in values]},
    )


def fraction_above(
    holds: np.ndarray,
    level: float,
    text: str,
    quantity: str,
    source: str,
    *,
    clusters,
    unit: str = "seeds",
    **evidence,
) -> Claim:
    """The fraction of cases (runs, starts) where a property holds exceeds `level`. `clusters`:
    each case's seed; cases of one seed share its data (and W₀), so the interval is over
    seeds (claims.clustered_proportion_effect: n counts seeds; `unit` names them). Not
    applicable when there is no case."""
    return _fraction(holds, ">", level, text, quantity, source, clusters, unit, evidence, 1.0)


def _fraction(holds, comparison, level, text, quantity, source, clusters, unit, evidence,
              centre=0.0):  # fmt: skip
    holds = np.asarray(holds, dtype=bool).ravel()
    if holds.size == 0:
        return Claim(text, None, {"not_applicable": "no case to count", **evidence})
    clusters = np.asarray(clusters).ravel()
    return Claim(
        text,
        # centre 1 for a share above a level: the share that fails is what is scaled
        rule=Rule(quantity, comparison, level, source, centre=centre),
        effect=clustered_proportion_effect(holds, clusters, unit=unit),
        evidence={"holds": int(holds.sum()), "cases": int(holds.size),
                  "seeds": sorted(set(clusters.tolist())), **evidence},
    )  # fmt: skip


def no_violations(
    margins, text: str, quantity: str, source: str, *, unit: str = "cases", clusters=None,
    level: float | None = None, **evidence
) -> Claim:  # fmt: skip
    """A property that must hold at every checked case (a lemma's inequality at every step):
    `margins` by how much it holds at each (< 0: violated; NaN: not checked). Supported when
    no case violates it, refuted by one violation ('k of N steps violate it, largest
    violation x'; `unit`: what a case is); not applicable when no case was checked.
    `clusters`: the seed of each case (n = distinct seeds, `claims.violations_effect`).
    `level`: where the margins are a level of ours less a value (level − value), the level,
    so the sensitivity column scales it (a count has no scale of its own)."""
    margins = np.asarray(margins, dtype=np.float64).ravel()
    if not np.isfinite(margins).any():
        return Claim(text, None, {"not_applicable": "no case to check", **evidence})
    rule = violations_rule(quantity, source)
    scaled = {}
    if level is not None:
        for factor in SENSITIVITY_FACTORS:  # margins at factor · level: + (factor − 1) · level
            moved = violations_effect(margins + (factor - 1.0) * level, unit=unit,
                                      clusters=clusters)  # fmt: skip
            scaled[f"{factor:g}x"] = Claim(text, rule=rule, effect=moved).status
    return Claim(
        text,
        rule=rule,
        effect=violations_effect(margins, unit=unit, clusters=clusters),
        evidence=evidence,
        level_sensitivity=scaled,
    )


def none_fail(
    holds, text: str, quantity: str, source: str, *, clusters, case: str = "starts",
    fails: str = "fail", **evidence
) -> Claim:  # fmt: skip
    """A claim about every case (every start): supported when none fails, refuted by one
    ('k of N starts fail (in m of S seeds)'); not applicable with no case. n = seeds."""
    holds = np.asarray(holds, dtype=bool).ravel()
    if holds.size == 0:
        return Claim(text, None, {"not_applicable": f"no {case} to check", **evidence})
    effect = failures_effect(holds, clusters, case=case, fails=fails)
    return Claim(text, rule=violations_rule(quantity, source), effect=effect, evidence=evidence)


def some_fail(
    holds, text: str, quantity: str, source: str, *, clusters, case: str = "starts",
    fails: str = "end elsewhere", **evidence
) -> Claim:  # fmt: skip
    """An existence claim (some start ends elsewhere), stated as a count before the data:
    supported when at least one case fails in at least one seed, refuted when none does
    ('k of N starts fail (in m of S seeds)': every case was checked, so the count is exact);
    not applicable with no case. n = seeds. The share of cases failing, with its interval
    over seeds (`clustered_proportion_effect`), is evidence beside the count."""
    holds = np.asarray(holds, dtype=bool).ravel()
    if holds.size == 0:
        return Claim(text, None, {"not_applicable": f"no {case} to check", **evidence})
    effect = failures_effect(holds, clusters, case=case, fails=fails)
    share = clustered_proportion_effect(~holds, np.asarray(clusters).ravel())
    return Claim(
        text,
        rule=Rule(f"{quantity}: count", ">", 0.0, source),
        effect=effect,
        evidence={"share_failing": share.text, "seeds": sorted(set(np.ravel(clusters).tolist())),
                  **evidence},
    )  # fmt: skip


def fraction_below(
    holds: np.ndarray,
    level: float,
    text: str,
    quantity: str,
    source: str,
    *,
    clusters,
    unit: str = "seeds",
    **evidence,
) -> Claim:
    """The fraction of cases where a property holds is below `level` (cases clustered by
    seed, as `fraction_above`)."""
    return _fraction(holds, "<", level, text, quantity, source, clusters, unit, evidence)
