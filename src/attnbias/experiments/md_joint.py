"""md-joint: ℓp mirror descent on W and v jointly (MD paper's ℓp-JointGD toy).

joint_toy data (n=2, T=3, d=2, self-attention), W₀ = 0 and v₀ = 0, normalized ℓp-MD with η = 0.1
for each p, each tensor normalised by its own dual norm. From zero the gradient in W vanishes
while v = 0, so v moves first. W is compared with the ℓp Att-SVM and v with the ℓp head-SVM of
the optimal tokens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..claims import Claim, identified
from ..config import (
    COMMON,
    LOSS,
    ZERO_OR_RANDOM_INIT,
    numbers,
    positive,
    positive_int,
)
from ..data import joint_toy
from ..engine import RunSpec
from ..engine.targets import norm_label
from ..figures import save_figure
from . import plotting
from .md_local import algorithm
from .runs import curves, random_init, seeds, sweep, sweep_summary

DESCRIPTION = "joint ℓp-MD of W and v from zero on the MD paper's toy: both reach their ℓp SVMs"

SCHEMA = {
    **COMMON,
    "loss": LOSS,
    "init_scale": ZERO_OR_RANDOM_INIT,
    "lr": positive("step size η of normalized ℓp-MD"),
    "ps": numbers("mirror exponents p", float, 1.0, strict=True),
    "steps": positive_int("steps of every run"),
    "threshold": positive("W and v count as converged below this final divergence"),
}


def specs(config: dict) -> list[RunSpec]:
    problem, scale = joint_toy(), config["init_scale"]
    return [
        RunSpec(
            {
                "experiment": "md-joint",
                "data": {"generator": "joint_toy"},
                "init": {"scale": scale, "seed": seed},
            },
            problem,
            algorithm(p, config["lr"]),
            config["steps"],
            {"W": random_init((2, 2), scale, seed, 0), "v": random_init(2, scale, seed, 1)},
            loss=config["loss"],
            norms=tuple(config["ps"]),
            alpha="optimal",
            grid_points=config["grid_points"],
        )
        for p in config["ps"]
        for seed in seeds(config)
    ]


def run(config: dict, out: Path) -> dict:
    report = sweep(config, out, specs(config))
    groups = curves(report.records)
    names = {algorithm(p, config["lr"]).name: norm_label(p) for p in config["ps"]}
    return {
        "claims": claims(groups, names, config["threshold"]),
        "figures": figure(groups, names, out),
        **sweep_summary(report),
    }


def claims(groups, names, threshold) -> list[Claim]:
    def final(metric_of):
        return {name: float(groups[name].final(metric_of(p)).mean()) for name, p in names.items()}

    div_W = final(lambda p: f"divergence/{p}")
    div_v = final(lambda p: f"divergence_v/{p}")
    score, prob = final(lambda p: "score/opt"), final(lambda p: "prob")
    return identified("md-joint", [
        Claim(
            f"W converges in direction to the ℓp-AttSVM of the optimal tokens for each p "
            f"(final divergence < {threshold:g})",
            all(v < threshold for v in div_W.values()),
            {"final_divergence_W": div_W},
        ),
        Claim(
            f"v converges in direction to the ℓp head-SVM for each p (final divergence < "
            f"{threshold:g})",
            all(v < threshold for v in div_v.values()),
            {"final_divergence_v": div_v},
        ),
        Claim(
            "Attention selects the optimal tokens and the head classifies every sample: the "
            "optimal-token score and the mean probability σ(y f) both exceed 0.99",
            all(v > 0.99 for v in score.values()) and all(v > 0.99 for v in prob.values()),
            {"final_score_opt": score, "final_probability": prob},
        ),
    ], ("W-own-p-svm", "v-own-p-svm", "selects-and-classifies"))  # fmt: skip


def figure(groups, names, out) -> list[str]:
    panels = [
        (lambda p: "score/opt", "softmax score of optimal tokens", (True, False)),
        (lambda p: "prob", "head probability σ(y f)", (True, False)),
        (lambda p: f"divergence/{p}", "D_ψp(Ŵ_mm, Ŵ_t), own p", (True, True)),
        (lambda p: f"divergence_v/{p}", "D_ψp(v̂_mm, v̂_t), own p", (True, True)),
    ]
    fig, axes = plotting.subplots(2, 3)
    for ax, (metric_of, label, log) in zip(axes.flat, panels):
        for name, p in names.items():
            plotting.band(ax, groups[name], metric_of(p), label=name, log=log)
        plotting.panel(ax, label)
    for ax, (tensor, metric) in zip(axes[1, 1:], [("W", "alignment"), ("v", "alignment_v")]):
        for name, p in names.items():  # the iterate's direction against its own SVM's
            c = groups[name]
            cosine = np.clip(c.mean(f"{metric}/{p}"), -1.0, 1.0)
            ax.plot(c.steps[1:], np.degrees(np.arccos(cosine))[1:], label=name)
        ax.set_xscale("log")
        plotting.panel(ax, f"angle between {tensor}_t and its ℓp SVM [degrees]")
    axes[0, 0].legend(fontsize=7)
    runs = plotting.runs_per_curve({name: groups[name] for name in names})
    fig.suptitle(
        f"md-joint: joint ℓp-MD of W and v from zero ({plotting.band_note(runs)})", fontsize=10
    )
    return save_figure(fig, out, "md-joint")
