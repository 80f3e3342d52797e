"""Deprecated: the optimiser comparison of text-finetune and vision (figures, rows, claims)
moved to `attnbias.experiments.compare`, its training to `attnbias.experiments.real_runs`, and
the per-layer norm tracking to `attnbias.real.records`; this module forwards the old names for
one release, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import warnings

MOVED = {
    **dict.fromkeys(("flat_layers", "layer_norms"), "attnbias.real.records"),
    "train_compared": "attnbias.experiments.real_runs",
    **dict.fromkeys(
        ("norm_growth", "compare_optimizers", "plot_movement", "norm_growth_claim",
         "loss_claims"),
        "attnbias.experiments.compare",
    ),
}  # fmt: skip


def __getattr__(name: str):
    if name not in MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"attnbias.real.compare.{name} moved to {MOVED[name]}.{name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(MOVED[name]), name)
