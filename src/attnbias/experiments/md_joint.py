"""md-joint: ℓp mirror descent on W and v jointly (MD paper's ℓp-JointGD toy).

joint_toy data (n=2, T=3, d=2, self-attention), W₀ = 0 and v₀ = 0, normalized ℓp-MD with η = 0.1
for each p, each tensor normalised by its own dual norm. From zero the gradient in W vanishes
while v = 0, so v moves first. W is compared with the ℓp Att-SVM and v with the ℓp head-SVM of
the optimal tokens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from pydantic import Field

from ..config import Loss, NonNegative, Positive, PositiveInt, numbers
from ..curves import curves
from ..data import joint_toy
from ..engine import RunSpec
from ..experiment_configs.sweep import SweepConfig
from ..figures import save_figure
from ..judging.claims import Claim, identified
from ..judging.verdicts import md as rules
from ..metrics import Norm, directional_bregman
from . import plotting
from .md_local import algorithm
from .runs import ZERO_OR_RANDOM_INIT, random_init, seeds, sweep, sweep_summary

DESCRIPTION = "joint ℓp-MD of W and v from zero on the MD paper's toy: both reach their ℓp SVMs"


class Config(SweepConfig):
    loss: Loss = Field(description="margin loss")
    init_scale: NonNegative = ZERO_OR_RANDOM_INIT
    lr: Positive = Field(description="step size η of normalized ℓp-MD")
    ps: numbers(float, 1.0, strict=True) = Field(description="mirror exponents p")
    steps: PositiveInt = Field(description="steps of every run")
    threshold: Positive = Field(
        description="v counts as converged below this final divergence (W's threshold is "
        "derived from the separation of the ℓp-AttSVMs)"
    )


def specs(config: Config) -> list[RunSpec]:
    problem, scale = joint_toy(), config.init_scale
    return [
        RunSpec(
            {
                "experiment": "md-joint",
                "data": {"generator": "joint_toy"},
                "init": {"scale": scale, "seed": seed},
            },
            problem,
            algorithm(p, config.lr),
            config.steps,
            {"W": random_init((2, 2), scale, seed, 0), "v": random_init(2, scale, seed, 1)},
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
        "claims": claims(groups, names, config.threshold, svm_separation(report.records, names)),
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, names, out))


# the unit of n: one toy problem of d = 2, its run from zero deterministic
TOY = "toy data set (d = 2; one zero-initialised run)"
# ours: v converges, not only lands near v_mm: from zero its first step is already close
V_FALL = 10.0


def svm_separation(records, names: dict[str, str]) -> dict[str, tuple[str, float]]:
    """For each algorithm (name → its p's label): the nearest other p's ℓq-AttSVM and
    D_ψp(Ŵ_mm^p, Ŵ_mm^q), the divergence a run that ended at that SVM would record, from the
    solutions its run stored (NaN where either was not solved)."""
    found = {}
    for record in records:
        name = record.config["algorithm"]["name"]
        if name not in names or name in found:
            continue
        p = names[name]
        solved = {q: record.arrays.get(f"W_mm_{q}") for q in names.values()}
        if solved[p] is None:
            continue
        apart = {
            q: float(directional_bregman(torch.as_tensor(solved[p]), torch.as_tensor(W), float(p)))
            for q, W in solved.items() if q != p and W is not None
        }  # fmt: skip
        finite = {q: d for q, d in apart.items() if np.isfinite(d)}
        nearest = min(finite, key=finite.get) if finite else None
        found[name] = (f"ℓ{nearest}", finite[nearest]) if nearest else ("", float("nan"))
    return found


def claims(groups, names, threshold, apart) -> list[Claim]:
    """The MD paper's joint-training claims on its toy (one deterministic run per p: each
    verdict is exact for this problem; judging/verdicts/md.py); `apart`: `svm_separation`."""
    own_W = {name: f"divergence/{p}" for name, p in names.items()}
    own_v = {name: f"divergence_v/{p}" for name, p in names.items()}
    return identified("md-joint", [
        rules.own_p_apart(groups, own_W, apart,
                          "W converges in direction to the ℓp-AttSVM of the optimal tokens for "
                          "each p, nearer it than to any other p's (final divergence < ¼ of its "
                          "divergence from the nearest other p's SVM)", exact=True, unit=TOY),
        rules.own_p(groups, own_v, threshold,
                    "v converges in direction to the ℓp head-SVM for each p (final divergence < "
                    f"{threshold:g}, and {V_FALL:g}× below its value after the first step)",
                    exact=True, unit=TOY, fall=V_FALL),
        rules.selects_and_classifies(groups, unit=TOY),
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
        f"md-joint: joint ℓp-MD of W and v from zero ({plotting.band_note(runs)})", fontsize=10
    )
    return save_figure(fig, out, "md-joint")
