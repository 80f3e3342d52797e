"""joint-rates: the NGD paper's rates for joint training of W and the head v (Theorems 3 and 4)
against the fixed-head rate (Theorem 1), measured (docs/theory.md#rates-measured).

dm data (T = 2), W₀ = 0 (and v₀ = 0), the exponential loss of the paper's §4. Three runs per
seed: NGD on W with the head fixed at the data's reference direction u*, the loss-normalised
joint steps of Eq. 13 (η/L, without its time factor, as the paper's Fig. 3) and joint-NGD
(each tensor normalised by its own gradient norm). Theorem 3 says joint training converges
more slowly, because ‖W_t‖ grows more slowly; Theorem 4 that v's margin on the optimal tokens
reaches a constant fraction of the max margin. Theorem 3's rate is proved with Eq. 13's time
factor, lost in extraction: its rows (the rate, the slowdown it credits to that factor, and
Theorem 4 in its setting) are inconclusive with that premise named (`thm3_premises`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..curves import MISALIGNMENT_CURVE, curves, misalignment_curve, without_diverged
from ..data import dm
from ..engine import Algorithm, RunSpec
from ..experiment_configs.joint_rates import Config
from ..figures import save_figure
from ..judging.claims import Claim, identified, mean_effect
from ..judging.verdicts import theory as rules
from ..judging.verdicts.common import paired
from ..theory_measures import (
    FLOAT_FLOOR,
    in_window,
    order_exponent,
    polylog_exponents,
    power_exponents,
    span,
)
from . import plotting
from .ngd_rates import misalignment_exponents
from .runs import seeds, sweep, sweep_summary
from .theory_figures import fit_panel

DESCRIPTION = (
    "NGD paper's joint-training rates (Thms 3-4) against the fixed head (Thm 1) on dm; v's margin"
)


def algorithms(config: Config) -> dict[str, Algorithm]:
    return {
        config.fixed: Algorithm(config.fixed, "ngd", config.lr),
        config.joint: Algorithm(config.joint, "gd", config.lr, normalize="loss"),
        config.joint_ngd: Algorithm(config.joint_ngd, "ngd", config.lr, normalize="per_tensor"),
    }


def specs(config: Config) -> list[RunSpec]:
    shape = {"n": config.n, "d": config.d, "opt_norm": config.opt_norm, "noise": config.noise}
    out = []
    for seed in seeds(config):
        problem = dm(**shape, seed=seed)
        for name, algorithm in algorithms(config).items():
            init = {"W": np.zeros((config.d, config.d))}
            if name != config.fixed:
                init["v"] = np.zeros(config.d)
            out.append(
                RunSpec(
                    {
                        "experiment": config.experiment,
                        "data": {"generator": "dm", **shape, "seed": seed},
                        "init": {"scale": 0.0, "seed": seed},
                    },
                    problem,
                    algorithm,
                    config.steps,
                    init,
                    loss=config.loss,
                    norms=(2.0,),
                    alpha="optimal",
                    grid_points=config.grid_points,
                )
            )
    return out


def run(config: Config, out: Path) -> dict:
    report = sweep(config, out, specs(config))
    groups = curves(report.records)
    for c in groups.values():
        c.values[MISALIGNMENT_CURVE] = misalignment_curve(c)
    fractions = margin_fractions(report.records, config)
    found = claims(groups, fractions, config)
    summary = {
        "claims": found,
        "v_margin_fraction": {k: [float(x) for x in v] for k, v in fractions.items()},
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, fractions, config, out))


def margin_fractions(records, config: Config) -> dict[str, np.ndarray]:
    """Per joint run: v's final normalised margin on the optimal tokens,
    min_i y_i vᵀx_{i,opt}/‖v‖, over the max margin 1/‖v_mm‖."""
    shape = {"n": config.n, "d": config.d, "opt_norm": config.opt_norm, "noise": config.noise}
    out: dict[str, list] = {}
    for record in without_diverged(records):
        if "final_v" not in record.arrays:
            continue
        problem = dm(**shape, seed=record.config["data"]["seed"])
        v, v_mm = record.arrays["final_v"], record.arrays["v_mm_2"]
        largest = np.max(np.abs(v))
        if largest > 0:  # the margin is scale-free; near the float range opt @ v is not
            v = v / largest
        opt = problem.X[np.arange(config.n), problem.opt]
        margin = np.min(problem.y * (opt @ v)) / np.linalg.norm(v)
        name = record.config["algorithm"]["name"]
        out.setdefault(name, []).append(margin * np.linalg.norm(v_mm))
    return {k: np.array(v) for k, v in out.items()}


def underflowed(groups, names, window) -> list[str]:
    """The precondition that the loss is still a float64 number over the window: once it
    underflows to 0, Eq. 13's step η/L has no value and the run stops moving, so an exponent
    fitted there (0) is an artefact of the format, not a rate."""
    out = []
    for name in names:
        loss = groups[name].values["loss"][:, in_window(groups[name].steps, window)]
        bad = int(np.sum(np.any(loss <= 0.0, axis=1)))
        if bad:
            out.append(
                f"{name}: the loss underflows to 0 within steps {span(window)} in {bad} of "
                f"{loss.shape[0]} runs (the run stops moving)"
            )
    return out


TIME_FACTOR_ABSENT = (
    "Eq. 13's time-dependent step factor is absent from the runs (its formula was lost in "
    "extraction and cannot be reconstructed; the paper's Fig. 3 omits it too)"
)


def thm3_premises(loss: str) -> list[str]:
    """The premises of Theorem 3 (and of the rate it states) that the runs do not meet, each
    a reason (docs/REFEREE.md, precondition policy): it is proved for the exponential loss,
    with Eq. 13's time-dependent step factor, which no run here has (`TIME_FACTOR_ABSENT`)."""
    unmet = [] if loss == "exponential" else [
        f"premise not met: Thm 3 is proved for the exponential loss (§4); the runs use {loss}"
    ]  # fmt: skip
    return [
        *unmet,
        f"premise not met: {TIME_FACTOR_ABSENT}; runs with that factor, read from the published "
        "paper, would decide it",
    ]


def thm3_readings(effect, squared: float, unsquared: float) -> str:
    """thm3-rate's note: whether the exponent's interval lies below the bound under each
    reading of Thm 3's lost formula, the squared order (the row's) and the unsquared one."""

    def said(bound: float) -> str:
        below = effect is not None and effect.high < bound
        return "lies below it" if below else "does not lie wholly below it"

    return (
        f"the interval {said(squared)}; against the unsquared order log log t / log t, the "
        f"reading in which Thm 1's proof bounds 1 − cos itself, the bound would be "
        f"{unsquared:.3g} and the interval {said(unsquared)}; the formula that would say which "
        "reading is Thm 3's was lost in extraction"
    )


def claims(groups, fractions: dict, config: Config) -> list[Claim]:
    fit = list(config.fit_window)
    fixed, joint = config.fixed, config.joint
    stalled = underflowed(groups, [joint, fixed], fit)
    slow = rules.slower(
        *paired(
            groups[joint],
            groups[fixed],
            misalignment_exponents(groups, joint, fit),
            misalignment_exponents(groups, fixed, fit),
        ),
        f"Theorem 3 against Theorem 1: under joint training with Eq. 13's steps ({joint}) W's "
        f"misalignment falls more slowly than with the head fixed ({fixed}), over steps "
        f"{span(fit)}; the runs' steps lack the mechanism the paper credits for it ("
        f"{TIME_FACTOR_ABSENT}): this is the slowdown of the loss-normalised step η/L alone",
        "the paper (§4): 'the convergence to implicit bias is much slower' than for a fixed "
        "decoder",
        # the paper's claim, credited to Eq. 13's time factor: one policy with thm3-rate's
        unmet=[*stalled, *thm3_premises(config.loss)],
        quantity=rules.slower_exponents(joint, fixed, fit),
    )
    c = groups[joint]
    growth = power_exponents(c.steps, c.values["norm/2"], fit)
    norm = rules.exponent_below(
        growth,
        0.5,
        f"The loss-normalised step alone slows ‖W_t‖: under {joint} (without Eq. 13's time "
        f"factor, the mechanism §4 credits) ‖W_t‖ grows far more slowly than t (log–log slope "
        f"below 0.5 over steps {span(fit)}; the fixed-head ‖W_t‖ grows like t)",
        f"log–log slope of ‖W_t‖ in t, {joint}",
        "the paper (§1, footnote 1): the step's additional factor 'results in a slow down of "
        "the rate of growth of [‖W_t‖]'; 0.5 ours (logarithmic growth has slope → 0)",
        unmet=underflowed(groups, [joint], fit),
    )
    bound = order_exponent(rules.polylog_misalignment_order, fit, polylog=True)
    rate = rules.exponent_below(
        polylog_exponents(c.steps, c.values[MISALIGNMENT_CURVE], fit, FLOAT_FLOOR),
        bound,
        f"Theorem 3's rate: under {joint} W's misalignment falls at least like "
        f"(log log t / log t)² (fitted over steps {span(fit)}, where that order itself fits "
        f"(log t)^{bound:.3g})",
        f"fitted exponent of 1 − cos(W_t, W_mm) in log t, {joint}",
        "derived: 'comparable to linear models trained with standard GD' (Soudry et al.: the "
        "distance within O(log log t / log t)); 1 − cos is half the squared distance, so the "
        "bound is the squared order's own exponent over the window; the formula was lost in "
        "extraction",
        unmet=[*underflowed(groups, [joint], fit), *thm3_premises(config.loss)],
    )
    # the other reading of the lost formula (referee read 12): 1 − cos at the distance's own
    # order, as Thm 1's proof bounds 1 − cos directly; both printed, neither decides the row
    unsquared = order_exponent(rules.polylog_order, fit, polylog=True)
    note = thm3_readings(rate.effect, bound, unsquared)
    rate = replace(rate, evidence={**rate.evidence, "effect_note": note})
    level = rules.THM4_MARGIN_FRACTION
    margin = Claim(
        f"Theorem 4: v's margin on the optimal tokens reaches a constant fraction of the max "
        f"margin: the final fraction is above {level:g} under both joint rules",
        parts=[
            rules.mean_above(
                fractions.get(name, np.array([])),
                level,
                "",
                f"final min_i y_i vᵀx_i,opt/‖v‖ over 1/‖v_mm‖, {name}",
                f"the paper: 'a constant factor' of the max margin (Thm 4, factor lost); "
                f"{level:g} ours",
            )
            for name in (joint, config.joint_ngd)
        ],
        # Thm 4 is proved in Thm 3's setting (Eq. 13's steps): its premises are Thm 3's
        unmet=thm3_premises(config.loss),
        evidence={k: {"mean": float(np.mean(v))} for k, v in fractions.items() if v.size},
    )
    return identified(
        config.experiment,
        [slow, norm, rate, margin],
        ("thm3-slower", "thm3-norm-growth", "thm3-rate", "thm4-v-margin"),
    )


def figure(groups, fractions, config: Config, out: Path) -> list[str]:
    fit = list(config.fit_window)
    names = [config.fixed, config.joint, config.joint_ngd]
    fig, axes = plotting.subplots(1, 4, size=(3.6, 3.0))
    for ax, name in zip(axes[0], names):
        theory = order_exponent(rules.thm1_order, fit) if name != config.joint else None
        fit_panel(
            ax,
            groups[name],
            MISALIGNMENT_CURVE,
            fit,
            mean_effect(misalignment_exponents(groups, name, fit)),
            theory,
            f"1 − cos(W_t, W_mm), {name}",
        )
    ax = axes[0][3]
    for name in names:
        plotting.band(ax, groups[name], "norm/2", label=name, log=(True, True))
    for name, values in fractions.items():
        ax.plot([], [], " ", label=f"{name}: v margin / max = {np.mean(values):.3g}")
    plotting.panel(ax, "‖W_t‖_F")
    ax.legend(fontsize=6)
    fig.suptitle(
        f"{config.experiment}: fixed head vs joint training on dm; fits (black, grey: 95 % "
        f"CI), Thm 1's bound (red); {plotting.band_note(plotting.runs_per_curve(groups))}",
        fontsize=10,
    )
    return save_figure(fig, out, config.experiment)
