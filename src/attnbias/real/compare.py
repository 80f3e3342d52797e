"""Comparing optimisers on one model (text-finetune, vision): per-layer norm tracking during
training, and the loss / accuracy / norm figures and table rows over (dataset, optimiser, seed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..claims import Claim, not_applicable
from ..figures import save_figure
from .runner import history_table, mean_std, series, smooth
from .train import seed_everything, train


def flat_layers(model) -> dict[str, torch.Tensor]:
    """Each layer's parameters as one detached vector (model.layer_groups() names the layers)."""
    return {
        name: torch.cat([p.detach().flatten() for p in params])
        for name, params in model.layer_groups().items()
    }


def layer_norms(model):
    """A train(extra_metrics=...) callback: per layer, the parameter norm ("norm/…") and the
    distance from the parameters when the callback was made ("moved/…")."""
    initial = {k: v.clone() for k, v in flat_layers(model).items()}

    def metrics(_model) -> dict[str, float]:
        row = {}
        for name, flat in flat_layers(model).items():
            row[f"norm/{name}"] = float(flat.norm())
            row[f"moved/{name}"] = float((flat - initial[name]).norm())
        return row

    return metrics


def train_compared(make_model, data, run_config: dict, checkpoints: Path, desc: str, **options):
    """Train make_model() (built after seeding with the run's seed) on data = (train, test)
    with the run's optimizer, tracking layer norms: the (metrics, arrays, info) a stored run
    holds. options go to train()."""
    seed_everything(run_config["seed"])
    model = make_model()
    history = train(
        model, *data, run_config["optimizer"],
        steps=run_config["steps"], batch_size=run_config["batch_size"],
        seed=run_config["seed"], eval_every=run_config["eval_every"],
        checkpoint_dir=checkpoints, extra_metrics=layer_norms(model), desc=desc, **options,
    )  # fmt: skip
    info = {"seconds": history.seconds, "diverged": history.diverged}
    return history_table(history), {}, info


def norm_growth(record) -> dict[str, float]:
    """Per layer: final norm / initial norm."""
    metrics = set(record.metrics["metric"].to_pylist())
    layers = [m.split("/", 1)[1] for m in sorted(metrics) if m.startswith("norm/")]
    return {
        n: float(series(record, f"norm/{n}")[1][-1] / series(record, f"norm/{n}")[1][0])
        for n in layers
    }


def compare_optimizers(records, datasets, labels, seeds, steps, out: Path, name: str, title: str):
    """records[(dataset, label, seed)] → (table rows, figure paths): per dataset a figure of the
    smoothed train loss and test accuracy (mean ± std over seeds) and one of per-layer movement."""
    import matplotlib.pyplot as plt

    window = max(steps // 10, 1)
    rows, figures = [], []
    for dataset in datasets:
        fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 3.8))
        for label in labels:
            every = [records[(dataset, label, s)] for s in seeds]
            # A diverged run is a result of its own kind: counted, left out of the numbers (if
            # every run diverged they are NaN, and no comparison with them holds).
            runs = [r for r in every if not r.info.get("diverged")] or every
            mean, std = mean_std([smooth(series(r, "train_loss")[1], window) for r in runs])
            x = np.arange(1, len(mean) + 1)
            ax_loss.plot(x, mean, label=label)
            ax_loss.fill_between(x, mean - std, mean + std, alpha=0.2)
            acc_mean, acc_std = mean_std([series(r, "test_accuracy")[1] for r in runs])
            acc_steps = series(runs[0], "test_accuracy")[0][: len(acc_mean)]
            ax_acc.errorbar(acc_steps, 100 * acc_mean, 100 * acc_std, label=label, capsize=2)
            tail = [float(np.mean(series(r, "train_loss")[1][-window:])) for r in runs]
            final = [100 * float(series(r, "test_accuracy")[1][-1]) for r in runs]
            rows.append(
                {
                    "dataset": dataset,
                    "optimizer": label,
                    "final_train_loss": [float(np.mean(tail)), float(np.std(tail))],
                    "final_test_accuracy": [float(np.mean(final)), float(np.std(final))],
                    "seconds_per_step": float(np.mean([r.info["seconds"] / steps for r in runs])),
                    "diverged": sum(bool(r.info.get("diverged")) for r in every),
                    "norm_growth": norm_growth(runs[0]),
                    "norm_growth_by_seed": [norm_growth(r) for r in runs],
                }
            )
        ax_loss.set(xlabel="step", ylabel=f"train loss (moving average of {window})", yscale="log")
        ax_acc.set(xlabel="step", ylabel="test accuracy (%)")
        ax_loss.legend()
        fig.suptitle(f"{title}, {dataset} (mean ± std over {len(seeds)} seed(s))")
        figures += save_figure(fig, out, f"{name}_{dataset}_loss")
        figures += plot_movement(records, dataset, labels, seeds[0], out, name)
    return rows, figures


def plot_movement(records, dataset, labels, seed, out: Path, name: str) -> list[str]:
    """Per optimiser, per layer: norm growth ‖θ_t‖/‖θ_0‖ (top) and movement ‖θ_t − θ_0‖/‖θ_0‖
    (bottom, log scale)."""
    import matplotlib.pyplot as plt

    layers = list(norm_growth(records[(dataset, labels[0], seed)]))
    fig, axes = plt.subplots(2, len(labels), figsize=(3.2 * len(labels), 5.6), sharey="row")
    axes = axes.reshape(2, len(labels))
    for (top, bottom), label in zip(axes.T, labels):
        record = records[(dataset, label, seed)]
        for layer in layers:
            steps, norm = series(record, f"norm/{layer}")
            _, moved = series(record, f"moved/{layer}")
            top.plot(steps, norm / norm[0], label=layer)
            bottom.plot(steps[1:], moved[1:] / norm[0], label=layer)  # 0 at step 0: off a log axis
        top.set(title=label)
        bottom.set(xlabel="step", yscale="log")
    axes[0, 0].set_ylabel("norm growth ‖θ_t‖ / ‖θ_0‖")
    axes[1, 0].set_ylabel("movement ‖θ_t − θ_0‖ / ‖θ_0‖")
    axes[0, -1].legend(fontsize=7)
    fig.suptitle(f"per-layer parameter norms, {dataset} (seed {seed})")
    fig.tight_layout()
    return save_figure(fig, out, f"{name}_{dataset}_norms")


def norm_growth_claim(rows, dataset: str, id: str) -> Claim:
    """Does every layer's parameter norm end above its start, for every optimiser and seed?
    Evidence: per optimiser and layer, ‖θ_T‖/‖θ_0‖ − 1 (mean and smallest over seeds) — a
    relative change of 1e-5 is invisible as a ratio printed to 4 digits."""
    growth = {
        r["optimizer"]: r.get("norm_growth_by_seed", [r["norm_growth"]])
        for r in rows
        if r["dataset"] == dataset
    }
    change = {
        name: {
            layer: {
                "mean": float(np.mean([s[layer] - 1 for s in seeds])),
                "min": float(np.min([s[layer] - 1 for s in seeds])),
            }
            for layer in seeds[0]
        }
        for name, seeds in growth.items()
    }
    return Claim(
        f"every layer's parameter norm grows during training, for every optimiser and seed "
        f"({dataset})",
        all(v["min"] > 0 for layers in change.values() for v in layers.values())
        if change
        else None,
        {"relative_norm_change": change},
        id,
    )


def loss_claims(rows, datasets, faster: tuple[str, ...], than: str, note: str):
    """For each dataset: do the `faster` optimisers all end with a lower train loss than `than`?"""
    claims = []
    for dataset in datasets:
        loss = {r["optimizer"]: r["final_train_loss"][0] for r in rows if r["dataset"] == dataset}
        claim = (
            f"{' and '.join(faster)} reach a lower train loss than {than} in the same steps "
            f"({dataset}){note}"
        )
        if not set(faster) | {than} <= set(loss):
            claims.append(not_applicable(claim, f"needs runs of {', '.join([*faster, than])}"))
            continue
        claims.append(
            Claim(
                claim,
                all(loss[f] < loss[than] for f in faster),
                {k: round(v, 4) for k, v in loss.items()},
            )
        )
    return claims
