"""md-joint: ℓp mirror descent on W and v jointly (MD paper's ℓp-JointGD toy).

joint_toy data (n=2, T=3, d=3, self-attention), W₀ and v₀ small and random (one run per seed),
normalized ℓp-MD with η = 0.1 for each p, each tensor normalised by its own dual norm. W is
compared with the ℓp Att-SVM and v with the ℓp head-SVM of the optimal tokens; on this toy both
differ by p, so each rule's threshold, ¼ of the divergence to the nearest other p's SVM, fails a
run that ends at another p's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import Field

from ..config import Loss, NonNegative, Positive, PositiveInt, numbers
from ..curves import curves
from ..data import joint_toy
from ..engine import RunSpec
from ..experiment_configs.sweep import SweepConfig
from ..figures import save_figure
from ..judging.claims import Claim, identified
from ..judging.verdicts import md as rules
from ..metrics import Norm
from . import plotting
from .md_local import algorithm, svm_separations
from .runs import ZERO_OR_RANDOM_INIT, random_init, seeds, sweep, sweep_summary

DESCRIPTION = "joint ℓp-MD of W and v from a small random start: both reach their ℓp SVMs"


class Config(SweepConfig):
    loss: Loss = Field(description="margin loss")
    init_scale: NonNegative = ZERO_OR_RANDOM_INIT
    lr: Positive = Field(description="step size η of normalized ℓp-MD")
    ps: numbers(float, 1.0, strict=True) = Field(description="mirror exponents p")
    steps: PositiveInt = Field(description="steps of every run")


def specs(config: Config) -> list[RunSpec]:
    problem, scale = joint_toy(), config.init_scale
    d = problem.X.shape[-1]
    return [
        RunSpec(
            {
                "experiment": "md-joint",
                # version 2: d = 3, head SVMs that differ by p (runs of the d = 2 toy not reused)
                "data": {"generator": "joint_toy", "version": 2},
                "init": {"scale": scale, "seed": seed},
            },
            problem,
            algorithm(p, config.lr),
            config.steps,
            {"W": random_init((d, d), scale, seed, 0), "v": random_init(d, scale, seed, 1)},
            loss=config.loss,
            norms=tuple(config.ps),
            alpha="optimal",
            grid_points=config.grid_points,
        )
        for p in config.ps
        for seed in seeds(config)
    ]


def run(config: Config, out: Path) -> dict:
    report = sweep(config, out, specs(config))
    groups = curves(report.records)
    names = {algorithm(p, config.lr).name: Norm.parse(p).label for p in config.ps}
    summary = {
        "claims": claims(
            groups,
            names,
            svm_separation(report.records, names),
            svm_separation(report.records, names, "v_mm"),
        ),
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, names, out))


def svm_separation(
    records, names: dict[str, str], stored: str = "W_mm"
) -> dict[str, tuple[str, float]]:
    """For each algorithm (name → its p's label): the nearest other p's ℓq SVM and
    D_ψp(mm^p, mm^q), the divergence a run that ended at that SVM would record, from the
    solutions its first run stored (`stored`: "W_mm", the Att-SVMs, or "v_mm", the head SVMs;
    NaN where either was not solved). md-joint's runs share one problem, so one run says it."""
    return {name: next(iter(by_seed.values()))
            for name, by_seed in svm_separations(records, names, stored).items()}  # fmt: skip


def claims(groups, names, apart, apart_v) -> list[Claim]:
    """The MD paper's joint-training claims on our toy, mean over seeds (judging/verdicts/md.py);
    `apart`, `apart_v`: `svm_separation` of the Att-SVMs and of the head SVMs."""
    own_W = {name: f"divergence/{p}" for name, p in names.items()}
    own_v = {name: f"divergence_v/{p}" for name, p in names.items()}
    return identified("md-joint", [
        rules.own_p_apart(groups, own_W, apart,
                          "W converges in direction to the ℓp-AttSVM of the optimal tokens for "
                          "each p, nearer it than to any other p's (final divergence < ¼ of its "
                          "divergence from the nearest other p's SVM)"),
        rules.own_p_apart(groups, own_v, apart_v,
                          "v converges in direction to the ℓp head-SVM of the optimal tokens for "
                          "each p, nearer it than to any other p's (final divergence < ¼ of its "
                          "divergence from the nearest other p's head SVM)", svm="ℓp head-SVM"),
        rules.selects_and_classifies(groups),
    ], ("W-own-p-svm", "v-own-p-svm", "selects-and-classifies"))  # fmt: skip


def figure(groups, names, out) -> list[str]:
    own = r"$D_{\psi_p}(\hat %s_{mm}, \hat %s_t)$, own $p$"  # each line in its own p
    panels = [
        (lambda p: "score/opt", "attention on the optimal tokens", (True, False), None),
        (lambda p: "prob", "the head's probability", (True, False), None),
        (lambda p: f"divergence/{p}", "W against its ℓp SVM", (True, True), own % ("W", "W")),
        (lambda p: f"divergence_v/{p}", "v against its ℓp SVM", (True, True), own % ("v", "v")),
    ]
    fig, axes = plotting.subplots(2, 3)
    for ax, (metric_of, label, log, ylabel) in zip(axes.flat, panels):
        for name, p in names.items():
            plotting.band(ax, groups[name], metric_of(p), label=name, log=log)
        plotting.panel(ax, label, ylabel=ylabel)
    for ax, (tensor, metric) in zip(axes[1, 1:], [("W", "alignment"), ("v", "alignment_v")]):
        for name, p in names.items():  # the iterate's direction against its own SVM's
            c = groups[name]
            cosine = np.clip(c.mean(f"{metric}/{p}"), -1.0, 1.0)
            angle = np.degrees(np.arccos(cosine))[1:]
            ax.plot(c.steps[1:], angle, label=name, **plotting.style(name, fig))
        ax.set_xscale("log")
        plotting.panel(ax, f"${tensor}_t$ against its ℓp SVM", ylabel="angle [degrees]")
    axes[0, 0].legend(fontsize=7)
    runs = plotting.runs_per_curve({name: groups[name] for name in names})
    fig.suptitle(
        f"md-joint: joint ℓp-MD of W and v from a small random start ({plotting.band_note(runs)})",
        fontsize=10,
    )
    return save_figure(fig, out, "md-joint")
