"""What a training run records besides its loss, and its history as a stored run's table:
per-layer parameter norms during training (a `train(extra_metrics=...)` callback) and the
tidy (step, metric, value) table of a `History`."""

from __future__ import annotations

import pyarrow as pa
import torch

from ..norms import lp_norm
from ..store import tidy
from .train import History


def flat_layers(model) -> dict[str, torch.Tensor]:
    """Each layer's parameters as one detached vector (model.layer_groups() names the layers)."""
    return {
        name: torch.cat([p.detach().flatten() for p in params])
        for name, params in model.layer_groups().items()
    }


def layer_norms(model):
    """A train(extra_metrics=...) callback: per layer, the parameter norm ("norm/…") and the
    distance from the parameters when the callback was made ("moved/…"), both ℓ2
    (`norms.lp_norm`: accurate however many entries a layer has)."""
    initial = {k: v.clone() for k, v in flat_layers(model).items()}

    def metrics(_model) -> dict[str, float]:
        row = {}
        for name, flat in flat_layers(model).items():
            row[f"norm/{name}"] = float(lp_norm(flat))
            row[f"moved/{name}"] = float(lp_norm(flat - initial[name]))
        return row

    return metrics


def history_table(history: History) -> pa.Table:
    """Per-step train loss (and SPS step size) plus the evaluations, as one tidy table."""
    per_step = tidy(
        history.steps, {"train_loss": history.train_loss, "step_size": history.step_size}
    )
    evals = history.eval_table()
    steps = evals.pop("step")
    return pa.concat_tables([per_step, tidy(steps, evals)])
