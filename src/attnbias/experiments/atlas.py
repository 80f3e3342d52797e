"""atlas: which optimiser picks which max-margin solution (docs/theory.md#atlas).

gaussian_unit data (n=6, T=8, d=10), seeds 1..N, W₀ ~ N(0, init_scale²), logistic loss, a fixed
number of steps. Every algorithm (NGD, SignGD, SpectralDescent, ℓ1.75-MD, torch's Adam and
Muon, as the config lists them) is measured in every norm (ℓ2, ℓ∞, spectral, ℓ1.75, nuclear)
by the margin gap 1 − γ_N(W_t)/γ*_N against the Att-SVM of that norm for the tokens the run
selects at the end. Figures: atlas, a heatmap of the median final gaps (optimiser × norm,
each optimiser's own norm outlined), and atlas-curves, the gaps against t (one panel per norm).

Claims: each algorithm that owns a norm (normalized steepest descent in it, or ℓp mirror
descent) ends with a small gap in that norm, the smallest of its row; Adam behaves like SignGD
(its smallest gap is the ℓ∞ one, and small) and Muon like SpectralDescent; each owner's gap
falls as a power of t, whose fitted exponent is reported beside the linear-model rate.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch
from matplotlib.lines import Line2D
from pydantic import Field, model_validator

from ..config import Algorithms, Norms, Positive, PositiveInt, Text, real
from ..curves import curves
from ..data import gaussian_unit
from ..engine import Algorithm, RunSpec
from ..experiment_configs.sweep import GaussianUnitConfig
from ..figures import save_figure
from ..judging.claims import Claim, identified, not_applicable
from ..judging.verdicts import atlas as rules
from ..judging.verdicts.common import over_runs
from ..norm_names import allowed_norms
from ..optim.registry import available
from ..svm import optimal_tokens
from . import plotting
from .runs import random_init, seeds, sweep, sweep_summary

logger = logging.getLogger(__name__)

DESCRIPTION = "Which optimiser selects which max-margin solution: margin gaps in five norms"


class GapConfig(GaussianUnitConfig):
    """Fields of the experiments that measure margin gaps of several optimisers in several
    norms (atlas, the re-examinations of its verdicts)."""

    steps: PositiveInt = Field(description="steps of every run")
    algorithms: Algorithms = Field(description="the optimisers compared ([[algorithms]] tables)")
    norms: Norms = Field(description=f"norms the margin gap is measured in ({allowed_norms()})")
    as_run: tuple[Text, ...] = Field(
        (),
        description="algorithms whose `like` row claims what this implementation or setting "
        "does as run (torch's Muon as shipped), not a theorem's conclusion: a stall is part of "
        "its outcome, not a reason for inconclusive (docs/REFEREE.md)",
    )

    @model_validator(mode="after")
    def _as_run_names_algorithms(self):
        names = [a.name for a in self.algorithms]
        for name in self.as_run:
            if name not in names:
                raise ValueError(f"as_run: {name!r} is not one of the algorithms {names}")
        return self


class Config(GapConfig):
    own_norm: dict[str, Text] = Field(
        description="algorithm name → the label of the norm whose max-margin solution it should "
        'select ("2", "inf", "spectral", "1.75", "nuc")'
    )
    like: dict[str, Text] = Field(
        description="algorithm name → the algorithm it should behave like (Adam → SignGD, "
        "Muon → spectral)"
    )
    threshold: Positive = Field(
        description="an own-norm gap counts as near 0 below this final median"
    )
    rate_start: real(gt=0, lt=1) = Field(
        description="rates are fitted over steps ≥ rate_start · last step"
    )
    max_slope: real(lt=0) = Field(
        description="an own-norm gap falls as a power of t if its fitted log–log slope is "
        "below this"
    )

    @model_validator(mode="after")
    def _names_and_norms_agree(self):
        """Names in own_norm / like must be algorithms; own norms must be measured."""
        names = [a.name for a in self.algorithms]
        labels = [n.label for n in self.norms]
        for field in ("own_norm", "like"):
            for name in getattr(self, field):
                if name not in names:
                    raise ValueError(f"{field}.{name} is not one of the algorithms {names}")
        for name, label in self.own_norm.items():
            if label not in labels:
                raise ValueError(f"own_norm.{name} = {label!r} is not one of norms {labels}")
        for name, other in self.like.items():
            if other not in self.own_norm:
                raise ValueError(f"like.{name} = {other!r} has no own_norm to compare with")
        return self

    @property
    def labels(self) -> list[str]:
        """How metrics name the measured norms ("2", "inf", "spectral", ...)."""
        return [n.label for n in self.norms]


def specs(config: GapConfig, run_seeds=None, algorithms=None) -> list[RunSpec]:
    """The config's runs; or those algorithms on those seeds (a tuning sweep's)."""
    run_seeds = seeds(config) if run_seeds is None else run_seeds
    algorithms = config.algorithms if algorithms is None else algorithms
    shape = {"n": config.n, "T": config.T, "d": config.d}
    problems = {s: gaussian_unit(**shape, seed=s) for s in run_seeds}
    d = config.d
    return [
        RunSpec(
            {
                "experiment": "atlas",
                "data": {"generator": "gaussian_unit", **shape, "seed": seed},
                "init": {"scale": config.init_scale, "seed": seed},
            },
            problems[seed],
            algorithm,
            config.steps,
            {"W": random_init((d, d), config.init_scale, seed)},
            loss=config.loss,
            norms=tuple(config.as_written("norms")),  # as written: the runs are keyed by them
            grid_points=config.grid_points,
        )
        for algorithm in runnable(algorithms)
        for seed in run_seeds
    ]


def runnable(algorithms) -> list:
    """The algorithms this torch can run (Algorithms, or their tables): Muon needs torch >= 2.9;
    without it the Muon runs are left out (said once) and its claim is not applicable."""

    def field(a, name: str) -> str:
        return str(getattr(a, name) if isinstance(a, Algorithm) else a.get(name, ""))

    kept = [a for a in algorithms if available(field(a, "optimizer"))]
    for a in algorithms:
        if a not in kept:
            logger.warning(
                "atlas: %s left out: this torch (%s) has no torch.optim.%s",
                field(a, "name"),
                torch.__version__,
                field(a, "optimizer").capitalize(),
            )
    return kept


def run(config: Config, out: Path) -> dict:
    report = sweep(config, out, specs(config))
    groups = curves(report.records)
    labels = config.labels
    own = dict(config.own_norm)
    summary = {
        "claims": claims(
            groups,
            labels,
            own,
            dict(config.like),
            config.threshold,
            config.rate_start,
            config.max_slope,
            {a.name: a for a in config.algorithms},
            config.as_run,
        ),
        "final_gaps": final_gaps(groups, labels),
        "tokens": tokens(report.records),
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, labels, own, out))


def final_gaps(groups, labels) -> dict:
    """The table: norm → algorithm → median final margin gap over seeds."""
    return {
        label: {
            name: float(over_runs(np.median, c.final(f"gap/{label}"))) for name, c in groups.items()
        }
        for label in labels
    }


def tokens(records) -> dict:
    """Per algorithm: the share of seeds whose selected tokens are the problem's optimal ones,
    and the share that select the same tokens as the first algorithm on that seed."""
    by_seed: dict[int, dict[str, np.ndarray]] = {}
    optimal: dict[int, np.ndarray] = {}
    for r in records:
        seed = r.config["data"]["seed"]
        by_seed.setdefault(seed, {})[r.config["algorithm"]["name"]] = r.arrays["alpha"]
        if seed not in optimal:
            p = gaussian_unit(*(r.config["data"][k] for k in "nTd"), seed=seed)
            optimal[seed] = optimal_tokens(p.X, p.y, p.v)
    names = list(next(iter(by_seed.values())))
    return {
        name: {
            "optimal": float(
                np.mean([np.array_equal(a[name], optimal[s]) for s, a in by_seed.items()])
            ),
            f"same_as_{names[0]}": float(
                np.mean([np.array_equal(a[name], a[names[0]]) for a in by_seed.values()])
            ),
        }
        for name in names
    }


def claims(
    groups, labels, own, like, threshold, rate_start, max_slope, algorithms=None, as_run=()
) -> list[Claim]:
    """groups: algorithm → Curves with "gap/<label>" for every label; own: algorithm → the
    label of its own norm; like: algorithm → the owner it should behave like; algorithms:
    name → Algorithm, whose design the theorems' preconditions are checked on; as_run: the
    algorithms whose `like` row is judged on its runs as they are (verdicts:
    judging/verdicts/atlas.py)."""
    algorithms = algorithms or {}
    present = {name: label for name, label in own.items() if name in groups}
    rows = "In each owned norm the owner ends with the smallest gap"
    out = [
        rules.own_norm_gap(groups, present, threshold, rate_start),
        rules.owner_smallest(groups, present)
        if len(present) > 1
        else not_applicable(rows, "fewer than two owners: nothing to compare"),
    ]
    for name, other in like.items():
        if name not in groups or other not in present:
            text = f"{name} behaves like {other}"
            out.append(not_applicable(text, f"{name} or {other} was not run"))
            continue
        out.append(rules.behaves_like(groups, name, other, present[other], list(labels),
                                      threshold, rate_start, algorithms.get(name),
                                      name in as_run))  # fmt: skip
    out.append(rules.own_norm_rate(groups, present, rate_start, max_slope))
    slugs = [
        "own-norm-gap",
        "owner-smallest",
        *(f"{n.lower()}-like-{o.lower()}" for n, o in like.items()),
        "own-norm-rate",
    ]
    return identified("atlas", out, slugs)


def figure(groups, labels, own, out) -> list[str]:
    """Two figures: atlas, the heatmap of median final gaps (optimiser × norm, own-norm cells
    outlined), and atlas-curves, small multiples of the gap against t (one panel per norm, every
    optimiser in it, owners drawn thick, one shared y scale)."""
    names, gaps = list(groups), final_gaps(groups, labels)
    fig, axes = plotting.subplots(1, 1, size=(1.3 * len(labels) + 2.4, 0.42 * len(names) + 1.6))
    ax = axes[0, 0]
    plotting.heatmap(
        ax,
        np.array([[gaps[label][name] for label in labels] for name in names]),
        names,
        [plotting.figure_norm_name(label) for label in labels],
        marked=[(name, plotting.figure_norm_name(own[name])) for name in names if name in own],
        colorbar_label="median final margin gap",
    )
    runs = plotting.runs_per_curve(groups)
    seeds = "one run" if runs == 1 else f"median over {runs} seeds"
    plotting.panel(
        ax,
        f"atlas: final margin gap ({seeds}); outlined: the optimiser's own norm",
        xlabel="norm $N$ of the margin gap $1-\\gamma_N(W_T)/\\gamma^*_N$",
        ylabel="optimiser",
    )
    paths = save_figure(fig, out, "atlas")

    cols = min(len(labels), 3)
    fig, axes = plotting.subplots(-(-len(labels) // cols), cols, sharey="all")
    for ax, label in zip(axes.flat, labels):
        for name in names:
            line = plotting.band(ax, groups[name], f"gap/{label}", label=name, log=(True, True))
            if own.get(name) == label:
                line.set_linewidth(2.5)
        plotting.panel(ax, f"gap in {plotting.figure_norm_name(label)}", xlabel="step $t$")
        ax.set_ylabel(plotting.metric_label(f"gap/{label}"))
    for ax in axes.flat[len(labels) :]:  # no norm left for this cell
        ax.set_axis_off()
    handles = [Line2D([], [], **plotting.style(name, fig)) for name in names]
    if len(labels) < axes.size:  # the legend fills the first empty cell
        axes.flat[len(labels)].legend(handles, names, loc="center", fontsize=7)
    else:
        fig.legend(handles, names, loc="outside right upper", fontsize=7)
    fig.suptitle(
        "atlas: margin gap against steps, thick: the optimiser's own norm "
        f"({plotting.band_note(runs)})",
        fontsize=10,
    )
    return paths + save_figure(fig, out, "atlas-curves")
