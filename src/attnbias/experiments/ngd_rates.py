"""ngd-rates: the NGD paper's rates for a fixed head, measured (docs/theory.md#rates-measured).

example1 data (NGD paper Fig. 2), W₀ small and random. Normalized GD at the reference step
size runs long (10⁵ steps at full scale): the exponent of its misalignment 1 − cos(W_t, W_mm)
is fitted over a stated window, against Theorem 1's bound, and on two windows to show the fit
is stable. A sweep of η gives the norm growth of Eq. 12 (‖W_t‖ ≈ ηt). Problems with other
numbers of samples (a different geometry, so a different margin) give Lemma 1's saturation rate
against the margin, from the stored iterates in log scale; problems whose tokens are scaled by
c (margins ∝ c², an exact symmetry) are a consistency check of that measurement. Polyak's step
with and without its cap γ_b tests Theorem 7 and the paper's remark that the capped step slows
down late. At these sizes example1 does not satisfy Assumption 1 (our reading; the summary
reports it per seed): the Theorem 1 rows test beyond the theorem.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from ..curves import MISALIGNMENT_CURVE, curves, misalignment_curve
from ..data import Problem, example1
from ..engine import Algorithm, RunSpec
from ..experiment_configs.ngd_rates import Config
from ..figures import save_figure
from ..judging.claims import Claim, as_consistency_check, identified, mean_effect
from ..judging.verdicts import theory as rules
from ..judging.verdicts.common import growing_until
from ..judging.verdicts.ngd import look_summary
from ..judging.verdicts.reexamine import PACE_SLOPE
from ..theory_measures import (
    ASSUMPTION1_EXAMPLE1,
    FLOAT_FLOOR,
    frobenius,
    growth_slopes,
    log_nonselected_mass,
    order_exponent,
    power_exponents,
    slope,
    span,
)
from . import plotting
from .runs import (
    assumption1_by_seed,
    random_init,
    seeds,
    sweep,
    sweep_summary,
)
from .theory_figures import fit_panel

DESCRIPTION = (
    "NGD paper's rates measured: Thm 1 / Thm 7 exponents, Eq. 12 norm growth vs η, "
    "Lemma 1 saturation vs margin"
)


def scaled(problem: Problem, c: float) -> Problem:
    """The problem with every token (and query) times c and the head over c: token scores are
    unchanged, logits scale by c², so ‖W_mm‖ scales by 1/c² and the margin by c²."""
    if c == 1.0:
        return problem
    return Problem(
        c * problem.X,
        c * problem.z,
        problem.y,
        problem.v / c,
        problem.query,
        problem.name,
        opt=problem.opt,
        params={**problem.params, "scale": c},
    )


def ngd(lr: float) -> Algorithm:
    return Algorithm(f"NGD η={lr:g}", "ngd", lr)


def polyak(cap: float) -> Algorithm:
    return Algorithm(f"Polyak γ_b={cap:g}", "polyak", cap, f_star="optimal")


def example1_shape(config: Config, n: int) -> dict:
    return {"n": n, "T": config.T, "d": config.d, "opt_score": config.opt_score}


def specs(config: Config) -> list[RunSpec]:
    out = []
    for seed in seeds(config):
        W0 = random_init((config.d, config.d), config.init_scale, seed)
        n = config.n
        runs = [
            (ngd(lr), n, 1.0, config.long_steps if lr == config.lr else config.short_steps)
            for lr in config.lrs
        ]
        runs += [(polyak(cap), n, 1.0, config.long_steps) for cap in config.polyak_caps]
        runs += [(ngd(config.lr), n, c, config.short_steps) for c in config.scales if c != 1.0]
        runs += [(ngd(config.lr), m, 1.0, config.short_steps) for m in config.sizes if m != n]
        for algorithm, m, c, steps in runs:
            # the margin sweeps keep their iterates: Lemma 1 needs log(1 − s_opt) exactly
            keep = algorithm.name == ngd(config.lr).name
            shape = example1_shape(config, m)
            out.append(
                RunSpec(
                    {
                        "experiment": config.experiment,
                        "data": {"generator": "example1", **shape, "seed": seed, "scale": c},
                        "init": {"scale": config.init_scale, "seed": seed},
                    },
                    scaled(example1(**shape, seed=seed), c),
                    algorithm,
                    steps,
                    {"W": W0},
                    loss=config.loss,
                    norms=(2.0,),
                    alpha="optimal",
                    grid_points=config.grid_points,
                    keep_trajectory=keep,
                )
            )
        out.append(assumed_spec(config, seed))
    return out


def assumed_shape(config: Config, shape=ASSUMPTION1_EXAMPLE1) -> dict:
    n, T, d = shape
    return {"n": n, "T": T, "d": d, "opt_score": config.opt_score}


def assumed_name(config: Config, shape=ASSUMPTION1_EXAMPLE1) -> str:
    """The group of NGD's runs on the data where Assumption 1 holds."""
    n, T, d = shape
    return f"{ngd(config.lr).name}, example1 n={n}, T={T}, d={d}"


def assumed_spec(config: Config, seed: int) -> RunSpec:
    """NGD at the reference η over long_steps on example1 of `assumed_shape`, W₀ small and
    random of its own size (no trajectory: Lemma 1's sweeps are on the reference shape)."""
    shape = assumed_shape(config)
    return RunSpec(
        {
            "experiment": config.experiment,
            "data": {"generator": "example1", **shape, "seed": seed, "scale": 1.0},
            "init": {"scale": config.init_scale, "seed": seed},
        },
        example1(**shape, seed=seed),
        ngd(config.lr),
        config.long_steps,
        {"W": random_init((shape["d"], shape["d"]), config.init_scale, seed)},
        loss=config.loss,
        norms=(2.0,),
        alpha="optimal",
        grid_points=config.grid_points,
    )


def group(record, config: Config) -> str:
    """Runs grouped by algorithm, token scale and number of samples (n: the reference one);
    the runs on the data where Assumption 1 holds apart (`assumed_name`)."""
    data, n = record.config["data"], config.n
    name = record.config["algorithm"]["name"]
    if (data["T"], data["d"]) != (config.T, config.d):
        return assumed_name(config)
    if data["n"] != n:
        return f"{name}, n = {data['n']}"
    return name if data["scale"] == 1.0 else f"{name}, tokens ×{data['scale']:g}"


def run(config: Config, out: Path) -> dict:
    report = sweep(config, out, specs(config))
    groups = curves(report.records, lambda record: group(record, config))
    for c in groups.values():  # 1 − cos θ as the engine records it
        c.values[MISALIGNMENT_CURVE] = misalignment_curve(c)
    saturation = saturation_rates(report.records, config)
    found = claims(groups, saturation, config)
    summary = {
        "claims": found,
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, saturation, config, found, out))


def saturation_rates(records, config: Config) -> dict:
    """Per kept trajectory (the reference NGD runs at every scale and size): the fitted slope
    of log(1 − s̄_opt) in ‖W_t‖ over the saturation window, the margin 1/‖W_mm‖, the token
    scale, the number of samples and the seed."""
    rates, margins, scales, sizes, seeds_ = [], [], [], [], []
    for record in records:
        if "trajectory_W" not in record.arrays or record.status != "finished":
            continue
        a = record.arrays
        steps, W = a["trajectory_steps"], a["trajectory_W"]
        problem = problem_of(record, config)
        keep = (steps >= config.saturation_window[0]) & (steps <= config.saturation_window[1])
        norms = frobenius(W[keep])
        log_mass = log_nonselected_mass(W[keep], problem, a["alpha"])
        rates.append(-slope(norms, log_mass))
        margins.append(1.0 / float(frobenius(a["W_mm_2"])))
        scales.append(record.config["data"]["scale"])
        sizes.append(record.config["data"]["n"])
        seeds_.append(record.config["data"]["seed"])
    return {
        "rate": np.array(rates),
        "margin": np.array(margins),
        "scale": np.array(scales),
        "n": np.array(sizes),
        "seed": np.array(seeds_),
    }


def problem_of(record, config: Config) -> Problem:
    data = record.config["data"]
    return scaled(example1(**example1_shape(config, data["n"]), seed=data["seed"]), data["scale"])


def outside_assumption1(report: dict) -> list[str]:
    """The premise of a row judged where Assumption 1 is meant to hold: it holds on every
    seed (`assumption1_by_seed`'s report); the seeds where it fails are named."""
    deltas = dict(zip(report["gram_dominance_seeds"], report["gram_dominance"]))
    failing = {s: delta for s, delta in deltas.items() if delta >= 1.0}
    if not failing:
        return []
    return [f"premise not met: Assumption 1 fails on {len(failing)} of {len(deltas)} seeds "
            f"(δ = {max(failing.values()):.2g} ≥ 1 on seed {max(failing, key=failing.get)}); "
            "their runs are outside Thm 1"]  # fmt: skip


def delta_summary(report: dict) -> str:
    """Assumption 1's δ over the seeds (`assumption1_by_seed`'s report), for the row: its range
    and on how many seeds it is below 1."""
    deltas = report["gram_dominance"]
    return (
        f"Assumption 1's δ from {min(deltas):.3g} to {max(deltas):.3g} over the seeds' problems: "
        f"δ < 1 on {report['assumption1_holds'].removesuffix(' (δ < 1)')}"
    )


def misalignment_exponents(groups, name: str, window) -> np.ndarray:
    """Per run, the power-law exponent of group `name`'s misalignment curve over the window."""
    c = groups[name]
    return power_exponents(c.steps, c.values[MISALIGNMENT_CURVE], window, FLOAT_FLOOR)


def window_norm_slopes(groups, name: str, window) -> np.ndarray:
    """Per run, the log–log slope of ‖W_t‖ in t over the window (1: linear growth, 0: none)."""
    c = groups[name]
    return power_exponents(c.steps, c.values["norm/2"], window)


def moving(groups, name: str, window, what: str) -> list[str]:
    """The precondition that ‖W_t‖ still grows like t in the window (log–log slope above
    1/2); below it the run is not under the normalised rule the theorem analyses."""
    growth = window_norm_slopes(groups, name, window)
    if np.all(growth > 0.5):
        return []
    with warnings.catch_warnings():  # all NaN where ‖W_t‖ stays put: "nan", no warning
        warnings.simplefilter("ignore", RuntimeWarning)
        low = np.nanmin(growth)
    return [f"{what}: ‖W_t‖ grows with log–log slope {low:.2g} ≤ 0.5 over steps {span(window)}"]


def stops_before(groups, name: str, window, fitted, cap: float) -> list[str]:
    """The precondition that the runs of `name` (Polyak at the cap `cap`, ∞: uncapped) still
    move at the uncapped step's pace through `window`, where the theorem's rate is judged
    (Thm 1's row fits there): ‖W_t‖ grows like t (log–log slope above 1/2, as in `moving`)
    up to its end. A finite cap binds once c‖∇L‖²/(L − L*) (≈ e^−gap) falls below 1/γ_b, and
    ‖W_t‖ then barely grows (a stand-in 1e300 did so at logit gaps ~691); γ_b = ∞ is exact
    (`optim.divisors.polyak_log_step`) and never binds. A run stopped so is judged only over
    the steps before (`fitted`): too short to judge a rate that holds from some step on."""
    until = growing_until(groups[name], PACE_SLOPE)
    stopped = ~(until >= window[-1])
    if not stopped.any():
        return []
    where = until[stopped & np.isfinite(until)]
    at = f"by step {np.max(where):.0f}" if where.size else "from the start"
    binds = (
        "its cap binds there (c‖∇L‖²/(L − L*) below 1/γ_b), so it is no longer the uncapped "
        "step; a larger cap, or γ_b = ∞, would decide it"
        if math.isfinite(cap)
        else "with γ_b = ∞ the step cannot bind, so the method itself (or the arithmetic) "
        "stalled; runs that keep the pace through the window would decide it"
    )
    return [
        f"{name} stops moving at the uncapped step's pace (‖W_t‖'s log–log slope falls to "
        f"≤ 0.5) {at} in {int(stopped.sum())} of {until.size} runs, before the end of Thm 1's "
        f"window {span(window)}: {binds}; the fit over steps {span(fitted)} is set by that "
        "stop, not by the theorem, and cannot judge its rate"
    ]


def claims(groups, saturation: dict, config: Config, assumed=ASSUMPTION1_EXAMPLE1) -> list[Claim]:
    """ngd-rates' claims; `assumed`: the (n, T, d) of the example1 runs on which Thm 1's rate
    is judged where Assumption 1 holds (checked on each seed's problem of that shape)."""
    ref = ngd(config.lr).name
    fit, (early, late) = list(config.fit_window), [list(w) for w in config.windows]
    tol = config.tolerance
    bound = thm1_bound(fit)
    thm1 = rules.exponent_below(
        misalignment_exponents(groups, ref, fit),
        bound,
        f"Theorem 1: under {ref} the misalignment 1 − cos(W_t, W_mm) falls at least like "
        f"log t / t (fitted over steps {span(fit)}, where log t / t itself fits t^{bound:.3g})",
        f"fitted exponent of 1 − cos(W_t, W_mm) in t, {ref}",
        "derived: Thm 1's proof (Lemma 2, Eq. 12, telescoping) gives O(log t / t), whose own "
        "exponent over the window is the bound; the formula was lost in extraction",
        unmet=moving(groups, ref, fit, "stalled"),
    )
    checked = assumption1_by_seed(example1, assumed_shape(config, assumed), config)
    n, T, d = assumed
    thm1_assumed = rules.exponent_below(
        misalignment_exponents(groups, assumed_name(config, assumed), fit),
        bound,
        f"Theorem 1 on data that satisfies its Assumption 1 (example1 n={n}, T={T}, d={d}, "
        f"δ < 1 checked on every seed): under {ref} the misalignment falls at least like "
        f"log t / t (fitted over steps {span(fit)})",
        f"fitted exponent of 1 − cos(W_t, W_mm) in t, {ref}, example1 n={n}, T={T}, d={d}",
        "derived: Thm 1's proof (Lemma 2, Eq. 12, telescoping) gives O(log t / t), whose own "
        "exponent over the window is the bound; the formula was lost in extraction",
        unmet=[*outside_assumption1(checked),
               *moving(groups, assumed_name(config, assumed), fit, "stalled")],
    )  # fmt: skip
    thm1_assumed.evidence.update(checked)
    thm1_assumed.evidence["effect_note"] = delta_summary(checked)
    asymptote = rules.exponent_matches(
        misalignment_exponents(groups, ref, late),
        rules.NGD_ASYMPTOTIC_EXPONENT,
        tol,
        f"The late exponent (steps {span(late)}) is t^{rules.NGD_ASYMPTOTIC_EXPONENT:g}: the "
        "distance ‖Ŵ_t − Ŵ_mm‖ falls like 1/t, a bounded residual on a linearly growing W_t",
        f"ours, derived: bounded residual ⇒ 1 − cos ∝ t^-2; ±{tol:.0%} ours",
    )
    # a check of our fitting method, not a paper's claim: listed apart (issue 29)
    stable = as_consistency_check(
        rules.window_stable(
            misalignment_exponents(groups, ref, early),
            misalignment_exponents(groups, ref, late),
            tol,
            (early, late),
        )
    )
    uncapped, capped = (
        polyak(cap).name for cap in (max(config.polyak_caps), min(config.polyak_caps))
    )
    # the uncapped step is exact (log domain): its rate is fitted over its own window, against
    # the same order over that window; a run that left the pace before its end is named
    early_fit = list(config.polyak_window)
    polyak_bound = thm1_bound(early_fit)
    thm7 = rules.exponent_below(
        misalignment_exponents(groups, uncapped, early_fit),
        polyak_bound,
        f"Theorem 7: under the Polyak step ({uncapped}) the misalignment falls at least like "
        f"log t / t (fitted over steps {span(early_fit)}, where log t / t itself fits "
        f"t^{polyak_bound:.3g})",
        f"fitted exponent of 1 − cos(W_t, W_mm) in t, {uncapped}",
        "derived: Thm 7 is Thm 1's analogue for the Polyak step (same order), whose own "
        "exponent over the window is the bound",
        unmet=[
            *moving(groups, uncapped, early_fit, "stalled"),
            *stops_before(groups, uncapped, fit, early_fit, max(config.polyak_caps)),
        ],
    )  # fmt: skip
    # the paper's remark, judged per seed: the capped step's rate early is faster than its
    # own late rate. Against NGD at an untuned η the early rate is evidence only (a comparison
    # with B untuned judges nothing of A: referee read 11), as is the step from which the cap
    # binds (‖W_t‖ leaves the uncapped pace)
    remark = ("the paper (§3, 'Extension to Polyak step-size'): 'the rates are much faster in "
              "the beginning, but slow down as training progresses'")  # fmt: skip
    beginning = list(config.early_window)
    ngd_early, capped_early = paired_exponents(groups, ref, capped, beginning)
    capped_late = misalignment_exponents(groups, capped, late)
    # the control a referee asks for (read 13): the same rule on the uncapped step, over the
    # same windows; a slowing it shows too is not the cap's
    control = rules.slower(
        misalignment_exponents(groups, uncapped, late),
        misalignment_exponents(groups, uncapped, beginning),
        f"{uncapped} slows down",
        remark,
    )
    slows = Claim(
        f"The capped Polyak step ({capped}) is much faster in the beginning (steps "
        f"{span(beginning)}) than as training progresses: its misalignment's exponent over "
        f"steps {span(late)} is smaller than over the beginning, as the paper remarks (once "
        "the cap binds its steps are GD steps of size γ_b)",
        parts=[
            rules.slower(
                capped_late, misalignment_exponents(groups, capped, beginning),
                f"{capped} slows down", remark,
                quantity=f"|fitted exponent of 1 − cos(W_t, W_mm) in t| of {capped}, over "
                f"steps {span(late)} over steps {span(beginning)}, per seed",
            ),
        ],
        evidence={
            "beginning_against_ngd": look_summary(rules.slower(
                ngd_early, capped_early, f"{capped} faster than {ref} beginning", remark,
                quantity=rules.slower_exponents(ref, capped, beginning),
            )),
            "cap_binds_from_step": growing_until(groups[capped], PACE_SLOPE).tolist(),
        },
    )  # fmt: skip
    slows.parts[0].evidence["effect_note"] = (
        f"the uncapped control ({uncapped}, the same windows): {control.effect.text} → "
        f"{control.status}"
    )
    lrs, kappas, lr_seeds = growth(groups, config)
    eq12 = rules.growth_per_lr(lrs, kappas, tol, lr_seeds)
    eq12_bound = rules.growth_bound(lrs, kappas, lr_seeds)
    linear = rules.proportional(
        lrs,
        kappas,
        tol,
        f"Consistency check: the growth rate of ‖W_t‖ is proportional to η (per seed, the "
        f"log–log slope of the late slope against η within ±{tol:.0%} of 1); it follows from "
        "every η's slope being ≈ η (eq12-norm-growth), so it adds no evidence of its own",
        "log–log slope of κ (late slope of ‖W_t‖ in t) against η, per seed",
        f"identity: κ ≈ η at every η makes the slope 1 (Eq. 12); ±{tol:.0%} ours",
        lr_seeds,
        consistency=True,
    )
    ratio = saturation["rate"] / saturation["margin"]
    lemma1 = rules.ratio_near_one(
        ratio,
        2 * tol,
        "Consistency check (Lemma 1): log(1 − s_opt) falls linearly in ‖W_t‖ at the rate the "
        f"margin sets: the fitted slope over −1/‖W_mm‖ is 1 (within ±{2 * tol:.0%}), on every "
        "problem (every number of samples and token scale; mean over seeds); it follows from "
        "margin 1 at W_mm once the run is aligned (thm1-rate), so it adds no evidence of its own",
        "fitted slope of log(1 − s̄_opt) in ‖W_t‖ over −γ* (γ* = 1/‖W_mm‖), mean over seeds "
        "(clustered)",
        f"derived: slope −γ* (Lemma 1 with margin 1 at W_mm); ±{2 * tol:.0%} ours",
        saturation["seed"],
        consistency=True,
    )
    by_size = saturation["scale"] == 1.0  # the geometry sweep (n varies)
    by_scale = saturation["n"] == config.n  # the symmetry check (tokens × c)
    lemma1_geometry = rules.proportional(
        saturation["margin"][by_size],
        saturation["rate"][by_size],
        tol,
        "Consistency check (Lemma 1 across problems): the saturation rate is proportional to "
        "the margin when the margin changes with the data's geometry (n ∈ "
        f"{sorted({config.n, *config.sizes})} samples; per seed, the log–log slope of the rate "
        f"against γ* within ±{tol:.0%} of 1); on each problem it follows from margin 1 at its "
        "W_mm once the run is aligned, so it adds no evidence of its own",
        "log–log slope of the saturation rate against the margin γ* across numbers of "
        "samples, per seed",
        f"derived: rate = γ*·‖W_t‖ (Lemma 1); ±{tol:.0%} ours",
        saturation["seed"][by_size],
        consistency=True,
    )
    lemma1_margin = rules.proportional(
        saturation["margin"][by_scale],
        saturation["rate"][by_scale],
        tol,
        "Consistency check: with the tokens scaled by c the problem is the same up to "
        "L_c(W) = L₁(c²W), so the rate must scale with the margin (∝ c²); per seed, the "
        f"log–log slope of the rate against γ* within ±{tol:.0%} of 1",
        "log–log slope of the saturation rate against the margin γ* across token scales, per seed",
        f"identity: scaling the tokens by c scales logits by c² (a symmetry); ±{tol:.0%} ours",
        saturation["seed"][by_scale],
        consistency=True,
    )
    outside = assumption1_by_seed(example1, example1_shape(config, config.n), config)
    # Thms 1, 7 and their lemmas assume it: report where it fails
    for claim in (thm1, thm7, slows, eq12, lemma1, lemma1_geometry):
        claim.evidence.update(outside)
    found = [
        thm1, thm1_assumed, asymptote, stable, thm7, slows, eq12, eq12_bound, linear, lemma1,
        lemma1_geometry, lemma1_margin,
    ]  # fmt: skip
    slugs = (
        "thm1-rate",
        "thm1-rate-assumption1",
        "asymptotic-exponent",
        "window-stable",
        "thm7-polyak-rate",
        "polyak-cap-slows",
        "eq12-norm-growth",
        "eq12-upper-bound",
        "eq12-linear-in-lr",
        "lemma1-rate",
        "lemma1-vs-margin-geometry",
        "lemma1-vs-margin",
    )
    return identified(config.experiment, found, slugs)


def thm1_bound(window) -> float:
    """Thm 1's order log t / t as an exponent fitted over the window."""
    return order_exponent(rules.thm1_order, window)


def paired_exponents(groups, a: str, b: str, window) -> tuple[np.ndarray, np.ndarray]:
    """The fitted exponents of groups a and b over the window, on the seeds both have."""
    ea, eb = misalignment_exponents(groups, a, window), misalignment_exponents(groups, b, window)
    ia = {int(s): k for k, s in enumerate(groups[a].seeds)}
    ib = {int(s): k for k, s in enumerate(groups[b].seeds)}
    common = sorted(set(ia) & set(ib))
    return ea[[ia[s] for s in common]], eb[[ib[s] for s in common]]


def growth(groups, config: Config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(η, κ, seed) per run of the η sweep: κ the slope of ‖W_t‖ in t over the growth
    window."""
    lrs, kappas, seeds_ = [], [], []
    for lr in config.lrs:
        c = groups[ngd(lr).name]
        k = growth_slopes(c.steps, c.values["norm/2"], config.growth_window)
        lrs += [lr] * len(k)
        kappas += list(k)
        seeds_ += [int(s) for s in c.seeds]
    return np.array(lrs), np.array(kappas), np.array(seeds_)


def figure(groups, saturation, config: Config, found, out: Path) -> list[str]:
    ref = ngd(config.lr).name
    fig, axes = plotting.subplots(1, 4, size=(3.6, 3.0))
    fit = list(config.fit_window)
    panels = [(ref, fit), (polyak(max(config.polyak_caps)).name, list(config.polyak_window))]
    for ax, (name, window) in zip(axes[0][:2], panels):
        e = mean_effect(misalignment_exponents(groups, name, window))
        fit_panel(
            ax,
            groups[name],
            MISALIGNMENT_CURVE,
            window,
            e,
            thm1_bound(window),
            f"1 − cos(W_t, W_mm), {name}",
        )
    ax = axes[0][2]
    lrs, kappas, _ = growth(groups, config)
    ax.scatter(lrs, kappas / lrs, s=10, label="runs")
    red = plotting.OKABE_ITO["vermillion"]
    ax.axhline(rules.EQ12_SLOPE_OVER_LR, color=red, ls="--", label="Eq. 12 bound (limit)")
    ax.set_xscale("log")
    plotting.panel(ax, "late slope of ‖W_t‖ in t over η", xlabel=r"step size $\eta$",
                   ylabel=r"slope of $\|W_t\|$ in $t$, over $\eta$")  # fmt: skip
    ax.legend(fontsize=6)
    ax = axes[0][3]
    ax.scatter(saturation["margin"], saturation["rate"], s=10, c=np.log(saturation["scale"]))
    grid = np.geomspace(saturation["margin"].min(), saturation["margin"].max(), 10)
    ax.plot(grid, rules.LEMMA1_RATE_OVER_MARGIN * grid, "--", color=red, label="Lemma 1: rate = γ*")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plotting.panel(ax, "saturation rate in ‖W_t‖ vs margin γ*", xlabel=r"$\gamma^* = 1/\|W_{mm}\|$",
                   ylabel="saturation rate in $\\|W_t\\|$")  # fmt: skip
    ax.legend(fontsize=6)
    fig.suptitle(
        f"{config.experiment}: fitted rates (black, grey: 95 % CI) against the theory (red); "
        f"{plotting.band_note(plotting.runs_per_curve(groups))}",
        fontsize=10,
    )
    return save_figure(fig, out, config.experiment)
