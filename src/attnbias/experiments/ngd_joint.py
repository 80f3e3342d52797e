"""ngd-joint: joint training of attention W and head v from zero (NGD paper §4, Fig. 3).

dm data (T = 2: a larger optimal token carrying the label, a noise token), self-attention,
W₀ = 0 and v₀ = 0. GD, NGD (the paper's eq. 13: loss-normalised steps η/L), Polyak (L* = 0)
and joint-NGD (each tensor's gradient normalised by its own norm) are compared: the loss → 0,
v aligns with the head SVM of the optimal tokens and W with their Att-SVM.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..claims import Claim, identified, not_applicable
from ..config import (
    COMMON,
    LOSS,
    ZERO_OR_RANDOM_INIT,
    Field,
    algorithms,
    check_named,
    positive,
    positive_int,
)
from ..data import dm
from ..engine import RunSpec
from .ngd_fixed import figure
from .runs import curves, optimal_token_specs, random_init, sweep, sweep_summary

DESCRIPTION = "joint training of W and v: GD vs NGD vs Polyak vs joint-NGD on dm (NGD paper Fig. 3)"

SCHEMA = {
    **COMMON,
    "n": positive_int("samples"),
    "d": positive_int("dimension"),
    "opt_norm": positive("norm of the label-carrying optimal token"),
    "noise": positive("scale of the noise token"),
    "loss": LOSS,
    "init_scale": ZERO_OR_RANDOM_INIT,
    "steps": positive_int("steps of every run"),
    "algorithms": algorithms("the algorithms compared ([[algorithms]] tables)"),
    "baseline": Field(str, "name of the plain GD algorithm"),
    "fastest": Field(str, "name of the algorithm the paper finds fastest (Polyak)"),
    "target_alignment": positive("alignment of W and v the fast algorithms must reach"),
    "target_loss": positive("final loss the fast algorithms must reach"),
}

PANELS = [
    ("loss", "training loss", (True, True)),
    ("score/opt", "softmax score of optimal tokens", (True, False)),
    ("1-alignment/2", "1 − alignment of W_t with W_mm", (True, True)),
    ("1-alignment_v/2", "1 − alignment of v_t with v_mm", (True, True)),
]


def specs(config: dict) -> list[RunSpec]:
    shape = {k: config[k] for k in ("n", "d", "opt_norm", "noise")}
    d, scale = config["d"], config["init_scale"]

    def init(seed: int) -> dict:
        return {"W": random_init((d, d), scale, seed, 0), "v": random_init(d, scale, seed, 1)}

    return optimal_token_specs(config, "dm", dm, shape, init)


def run(config: dict, out: Path) -> dict:
    check_named(config, ("baseline",))  # fastest: optional (its claim is then n/a)
    report = sweep(config, out, specs(config))
    groups = curves(report.records)
    config = {**config, "data": "dm"}
    return {
        "claims": claims(groups, config),
        "figures": figure(groups, config, out, PANELS),
        **sweep_summary(report),
    }


CLAIMS = (
    "The loss goes to 0: {fast} end below {target_loss:g}, and every algorithm decreases it",
    "The head v aligns with the head SVM of the optimal tokens (every seed of {fast} ≥ {target:g})",
    "W aligns with the Att-SVM of the optimal tokens (every seed of {fast} ≥ {target:g})",
    "Every other algorithm is faster than {baseline}: lower final loss at equal steps",
    "{fastest} is the fastest of all (the paper's Fig. 3: \"all other algorithms are faster than "
    'GD, with Polyak step being the fastest"): lowest final loss and lowest run-mean '
    "misalignment 1 − alignment of both W and v",
)
SLUGS = ("loss-to-zero", "v-aligns", "W-aligns", "all-beat-gd", "polyak-fastest")


def claims(groups, config) -> list[Claim]:
    fast = [name for name in groups if name != config["baseline"]]
    text = [
        c.format(
            fast=", ".join(fast),
            baseline=config["baseline"],
            fastest=config["fastest"],
            target=config["target_alignment"],
            target_loss=config["target_loss"],
        )
        for c in CLAIMS
    ]
    if not fast:
        why = f"only {config['baseline']} was run"
        return identified("ngd-joint", [not_applicable(t, why) for t in text], SLUGS)
    final = {
        metric: {name: float(c.final(metric).mean()) for name, c in groups.items()}
        for metric in ("loss", "alignment/2", "alignment_v/2", "score/opt")
    }
    worst = {
        m: float(np.min([groups[name].lowest_final(m) for name in fast]))  # NaN-propagating
        for m in ("alignment/2", "alignment_v/2")
    }
    loss = final["loss"]
    target, target_loss = config["target_alignment"], config["target_loss"]
    speed = {
        m: {name: float((1.0 - c.values[m][:, c.steps > 0]).mean()) for name, c in groups.items()}
        for m in ("alignment/2", "alignment_v/2")
    }
    fastest = config["fastest"]

    def lowest(values: dict) -> bool:
        """Is `fastest` strictly below every other algorithm (NaN fails)?"""
        return all(values[fastest] < v for name, v in values.items() if name != fastest)

    out = [
        Claim(
            text[0],
            all(loss[name] < target_loss for name in fast)
            and all(c.mean("loss")[-1] < c.mean("loss")[0] for c in groups.values()),
            {"final_mean_loss": loss},
        ),
        Claim(
            text[1],
            worst["alignment_v/2"] >= target,
            {"min_final_alignment_v": worst["alignment_v/2"], "mean": final["alignment_v/2"]},
        ),
        Claim(
            text[2],
            worst["alignment/2"] >= target,
            {"min_final_alignment_W": worst["alignment/2"], "mean": final["alignment/2"]},
        ),
        Claim(
            text[3],
            all(loss[name] < loss[config["baseline"]] for name in fast),
            {"final_mean_loss": loss, "fastest": min(loss, key=loss.get)},
        ),
        Claim(
            text[4],
            lowest(loss) and lowest(speed["alignment/2"]) and lowest(speed["alignment_v/2"]),
            {
                "final_mean_loss": loss,
                "run_mean_misalignment_W": speed["alignment/2"],
                "run_mean_misalignment_v": speed["alignment_v/2"],
            },
        )
        if fastest in groups and len(groups) > 1
        else not_applicable(text[4], f"{fastest} and another algorithm must both be run"),
    ]
    return identified("ngd-joint", out, SLUGS)
