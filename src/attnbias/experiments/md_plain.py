"""md-plain: the MD paper's own algorithm, plain (unnormalised) ℓp-AttGD, on md-local's
problems, with its poly-logarithmic rate measured (docs/theory.md#rates-measured).

md-local runs normalized ℓp-MD; the paper's convergence theorem and its rate are about the
plain step θ ← θ − η∇L. Its iterate grows only like log t, so the directional Bregman
divergence to the ℓp-AttSVM falls like a power of log t, not of t: the exponent b of
D ∝ (log t)^b is fitted over a stated window and on two windows, and each run is compared with
the SVM of every p.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
from pydantic import Field, model_validator

from ..config import Positive, PositiveInt, numbers
from ..curves import Curves, curves
from ..data import gaussian_unit
from ..engine import Algorithm, RunSpec
from ..experiment_configs.sweep import GaussianUnitConfig
from ..figures import save_figure
from ..judging.claims import Claim, as_consistency_check, identified, mean_effect, not_applicable
from ..judging.verdicts import md as md_rules
from ..judging.verdicts import theory as rules
from ..metrics import Norm
from ..theory_measures import Window, check_window, order_exponent, polylog_exponents, span
from . import plotting
from .runs import random_init, seeds, sweep, sweep_summary
from .theory_figures import fit_panel

DESCRIPTION = (
    "plain (unnormalised) ℓp-AttGD, the MD paper's algorithm, on md-local's problems: its "
    "limit and poly-log rate"
)


class Config(GaussianUnitConfig):
    lr: Positive = Field(description="step size η of plain ℓp-MD")
    ps: numbers(float, 1.0, strict=True) = Field(description="mirror exponents p")
    steps: PositiveInt = Field(description="steps of every run")
    fit_window: Window = Field(description="[first, last] step of the poly-log fit")
    windows: tuple[Window, Window] = Field(
        description="two consecutive windows whose fitted exponents must agree"
    )
    tolerance: Positive = Field(description="relative tolerance of the window-stability claim")

    @model_validator(mode="after")
    def _windows_fit_the_run(self):
        for name, window in [
            ("fit_window", self.fit_window),
            ("windows[0]", self.windows[0]),
            ("windows[1]", self.windows[1]),
        ]:
            check_window(window, self.steps, name)
            if window[0] <= np.e**np.e:  # where log log t / log t starts to decrease
                raise ValueError(f"{name} must start above step e^e, got {window[0]:g}")
        return self


def plain_md(p: float, lr: float) -> Algorithm:
    return Algorithm(f"plain ℓ{p:g}-MD", "md", lr, p=p, normalize=None)


def specs(config: Config) -> list[RunSpec]:
    shape = {"n": config.n, "T": config.T, "d": config.d}
    return [
        RunSpec(
            {
                "experiment": config.experiment,
                "data": {"generator": "gaussian_unit", **shape, "seed": seed},
                "init": {"scale": config.init_scale, "seed": seed},
            },
            gaussian_unit(**shape, seed=seed),
            plain_md(p, config.lr),
            config.steps,
            {"W": random_init((config.d, config.d), config.init_scale, seed)},
            loss=config.loss,
            norms=tuple(config.ps),
            grid_points=config.grid_points,
        )
        for p in config.ps
        for seed in seeds(config)
    ]


def run(config: Config, out: Path) -> dict:
    report = sweep(config, out, specs(config))
    groups = curves(report.records)
    own = {plain_md(p, config.lr).name: own_metric(p) for p in config.ps}
    found = claims(groups, own, config)
    summary = {
        "claims": found,
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, own, config, out))


def own_metric(p: float) -> str:
    return f"divergence/{Norm.parse(p).label}"


# md-local's threshold for "converged in direction": the limit claim is judged only there
CONVERGED = 0.05
LOG_LARGEST = math.log(np.finfo(np.float64).max)  # steps beyond e^this are not float64s


def exponents(c: Curves, metric: str, window) -> np.ndarray:
    return polylog_exponents(c.steps, c.values[metric], window)


def polylog_reach(c: Curves, metric: str, window, level: float) -> float:
    """The step by which the mean `metric`, falling from its last value at its own fitted rate
    (log t)^b (b: the mean exponent over `window`), reaches `level`; NaN for a rate that does
    not fall, inf for a step beyond float64's range."""
    with warnings.catch_warnings():  # no runs, or too few steps in the window: NaN, no warning
        warnings.simplefilter("ignore", RuntimeWarning)
        b = float(np.nanmean(exponents(c, metric, window)))
        last = float(np.mean(c.values[metric][:, -1]))
    log_last_step = math.log(float(c.steps[-1]))
    if not b < 0 or not last > 0 or not log_last_step > 0:
        return float("nan")
    # log t = log T · (level/last)^(1/b); its own log first: a barely falling rate (b near 0)
    # takes the power itself past float64's range (a Python float power raises there)
    if math.log(log_last_step) + math.log(level / last) / b >= math.log(LOG_LARGEST):
        return math.inf
    log_step = log_last_step * (level / last) ** (1.0 / b)
    return float(np.exp(log_step)) if log_step < LOG_LARGEST else math.inf


def claims(groups: dict[str, Curves], own: dict[str, str], config: Config) -> list[Claim]:
    fit, (early, late) = list(config.fit_window), [list(w) for w in config.windows]
    bound = polylog_bound(fit)
    reach = {name: polylog_reach(groups[name], metric, fit, CONVERGED)
             for name, metric in own.items()}  # fmt: skip
    nearest = (
        md_rules.own_p_nearest(groups, own, converged_below=CONVERGED, reach=reach)
        if len(own) > 1
        else not_applicable("each run ends nearest its own p's SVM", "one p: nothing to compare")
    )
    rate = Claim(
        f"The MD paper's rate for plain ℓp-AttGD: D_ψ(Ŵ_mm, Ŵ_t) falls at least like "
        f"(log log t / log t)² (fitted exponent of log t over steps {span(fit)}, where that order "
        f"itself fits (log t)^{bound:.3g}; every p)",
        parts=[
            rules.exponent_below(
                exponents(groups[name], metric, fit),
                bound,
                "",
                f"fitted exponent of D_ψ(Ŵ_mm, Ŵ_t) in log t, {name}",
                "ours, derived from the abstract's 'comparable to that of traditional GD in "
                "simpler models' (the rate theorem itself was not read: its formula is not in "
                "the seed texts): GD's rate there, Soudry et al.'s distance within "
                "O(log log t / log t); D_ψ is locally half a squared distance, so the bound is "
                "the squared order's own exponent over the window",
            )
            for name, metric in own.items()
        ],
    )
    # a check of our fitting method, not a paper's claim: listed apart (as ngd-rates')
    stable = as_consistency_check(Claim(
        f"The poly-log fit is stable: the exponent on steps {span(late)} is within "
        f"{config.tolerance:.0%} of the one on {span(early)}, for every p",
        parts=[
            rules.window_stable(
                exponents(groups[name], metric, early),
                exponents(groups[name], metric, late),
                config.tolerance,
                (early, late),
                name,
            )
            for name, metric in own.items()
        ],
    ))  # fmt: skip
    return identified(
        config.experiment,
        [nearest, rate, stable],
        ("own-p-nearest", "polylog-rate", "polylog-window-stable"),
    )


def polylog_bound(window) -> float:
    """The MD rate's order for D_ψ, (log log t / log t)², as an exponent of log t fitted over
    the window."""
    return order_exponent(rules.polylog_misalignment_order, window, polylog=True)


def figure(groups, own: dict[str, str], config: Config, out: Path) -> list[str]:
    """Per p: the own-p divergence against log t on log–log axes (a power of log t is a line)
    with the fit, its CI and the theory's bound."""
    fig, axes = plotting.subplots(1, len(own), size=(3.6, 3.0))
    fit = list(config.fit_window)
    for ax, (name, metric) in zip(axes[0], own.items()):
        c = groups[name]
        keep = c.steps > 1
        in_log = Curves(np.log(c.steps[keep]), {metric: c.values[metric][:, keep]})
        effect = mean_effect(exponents(c, metric, fit))
        fit_panel(
            ax,
            in_log,
            metric,
            np.log(fit),
            effect,
            polylog_bound(fit),
            f"D_ψ(Ŵ_mm, Ŵ_t), {name}",
            label="data",
        )
        ax.set_xlabel("log t")
    fig.suptitle(
        f"{config.experiment}: plain ℓp-AttGD (η = {config.lr:g}) against log t; fit (black, "
        "grey: 95 % CI) and the theory's bound (red); "
        f"{plotting.band_note(plotting.runs_per_curve(groups))}",
        fontsize=10,
    )
    return save_figure(fig, out, config.experiment)
