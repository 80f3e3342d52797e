"""Comparing optimisers on one model (text-finetune, vision): the loss / accuracy / norm figures
and table rows over (dataset, optimiser, seed), and the arms the claims of both experiments
compare (verdicts/real.py: paired by seed, each optimiser at the rate its search chose)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..curves import without_diverged
from ..figures import save_figure
from ..judging.claims import Claim, mean_effect, not_applicable
from ..judging.verdicts.real import Arm, norm_grows
from ..store import DIVERGED
from . import plotting
from .real_runs import RateSearch, mean_std, series, smooth

TAIL = 0.1  # the final train loss: the minibatch loss averaged over the last 10 % of the steps


def final_over_initial_norms(record) -> dict[str, float]:
    """Per layer: final norm / initial norm."""
    metrics = set(record.metrics["metric"].to_pylist())
    layers = [m.split("/", 1)[1] for m in sorted(metrics) if m.startswith("norm/")]
    return {
        n: float(series(record, f"norm/{n}")[1][-1] / series(record, f"norm/{n}")[1][0])
        for n in layers
    }


def final_train_loss(record, steps: int) -> float:
    """The run's minibatch train loss averaged over its last TAIL of `steps` (NaN if it
    diverged)."""
    if record.status == DIVERGED:
        return math.nan
    window = max(int(steps * TAIL), 1)
    return float(np.mean(series(record, "train_loss")[1][-window:]))


def final_test_accuracy(record) -> float:
    """The run's test accuracy (%) at its last evaluation (NaN if it diverged)."""
    if record.status == DIVERGED:
        return math.nan
    return 100 * float(series(record, "test_accuracy")[1][-1])


def compare_optimizers(records, datasets, labels, seeds, steps, out: Path, name: str, title: str,
                       searches: dict | None = None):  # fmt: skip
    """records[(dataset, label, seed)] → (table rows, figure paths): per dataset a figure of the
    smoothed train loss and test accuracy (mean ± std over seeds) and one of per-layer movement.
    Each row holds its per-seed values in `seeds` order (NaN for a diverged run) and, from
    searches[(dataset, label)], the rates tried and the one chosen."""
    import matplotlib.pyplot as plt

    window = max(int(steps * TAIL), 1)
    searches = searches or {}
    rows, figures = [], []
    for dataset in datasets:
        fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 3.8))
        for label in labels:
            every = [records[(dataset, label, s)] for s in seeds]
            # Diverged runs are counted and left out of the curves (if every run diverged
            # they are drawn, and their NaN per-seed values make no comparison hold).
            runs = without_diverged(every) or every
            mean, std = mean_std([smooth(series(r, "train_loss")[1], window) for r in runs])
            x = np.arange(1, len(mean) + 1)
            look = plotting.style(label, fig)
            ax_loss.plot(x, mean, label=label, **look)
            ax_loss.fill_between(x, mean - std, mean + std, alpha=0.2, color=look["color"])
            acc_mean, acc_std = mean_std([series(r, "test_accuracy")[1] for r in runs])
            acc_steps = series(runs[0], "test_accuracy")[0][: len(acc_mean)]
            ax_acc.errorbar(
                acc_steps, 100 * acc_mean, 100 * acc_std, label=label, capsize=2, **look
            )
            losses = [final_train_loss(r, steps) for r in every]
            final_by_seed = [final_test_accuracy(r) for r in every]
            final = [final_test_accuracy(r) for r in runs]
            growth = [final_over_initial_norms(r) for r in every]
            search = searches.get((dataset, label), RateSearch())
            rows.append(
                {
                    "dataset": dataset,
                    "optimizer": label,
                    "final_train_loss": [float(np.nanmean(losses)), float(np.nanstd(losses))],
                    "final_train_loss_by_seed": losses,
                    "final_test_accuracy": [float(np.mean(final)), float(np.std(final))],
                    "final_test_accuracy_by_seed": final_by_seed,
                    "seconds_per_step": float(np.mean([r.info["seconds"] / steps for r in runs])),
                    "diverged": len(every) - len(without_diverged(every)),
                    "norm_growth": growth[0],
                    "norm_growth_by_seed": growth,
                    "seeds": list(seeds),
                    **({"rate_search": search.summary()} if search.scores else {}),
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

    layers = list(final_over_initial_norms(records[(dataset, labels[0], seed)]))
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


def evaluated(row: dict) -> np.ndarray:
    """Which of a row's per-seed values the claims compare: every seed but the one its rate
    search trained from (the rate was chosen on that seed's runs; a row without a search, or
    without its seeds, keeps every value)."""
    size = len(row["final_train_loss_by_seed"])
    chosen_on = row.get("rate_search", {}).get("seed")
    if chosen_on is None or "seeds" not in row:
        return np.ones(size, dtype=bool)
    return np.asarray(row["seeds"]) != chosen_on


def arms(rows, dataset: str) -> dict[str, Arm]:
    """Optimiser → its Arm on `dataset`: per-seed final train loss and log norm growth of each
    layer (NaN for a diverged run), on the seeds the rate search did not train from
    (`evaluated`), and whether its chosen rate is inside the rates tried (a row without a
    search — a rate given, not chosen — counts as inside)."""
    out = {}
    for r in rows:
        if r["dataset"] != dataset:
            continue
        keep = evaluated(r)
        values = {"final_train_loss": np.asarray(r["final_train_loss_by_seed"], dtype=float)}
        for layer in r["norm_growth_by_seed"][0]:
            growth = [g.get(layer, math.nan) for g in r["norm_growth_by_seed"]]
            values[f"log_growth/{layer}"] = np.log(np.asarray(growth, dtype=float))
        losses = values["final_train_loss"]
        for key in values:  # a diverged run's norms are no evidence either
            values[key] = np.where(np.isfinite(losses), values[key], np.nan)[keep]
        interior = r.get("rate_search", {}).get("interior", True)
        out[r["optimizer"]] = Arm(r["optimizer"], values, interior=interior)
    return out


# The optimisers of the NGD paper's ViT figures (App. C, Figs. 6 and 7): its norm-growth
# statement is about runs of these, not of ℓp-MD.
NGD_PAPER_OPTIMIZERS = ("SGD", "SNGD", "SPS", "Adam")


def norm_growth_claim(rows, dataset: str, only: tuple[str, ...] | None = None) -> Claim:
    """Every layer's norm grows by ≥ 1 % (ours, `real.MIN_LOG_GROWTH`) on `dataset`, for every
    optimiser, or for those named in `only` (verdicts/real.py)."""
    who = "every optimiser" if only is None else ", ".join(only)
    text = f"every layer's parameter norm grows during training, for {who} ({dataset})"
    found = arms(rows, dataset)
    if only is not None:
        found = {label: arm for label, arm in found.items() if label in only}
    if not found:
        return not_applicable(text, "no runs")
    return norm_grows(found, layers_of(rows, dataset), text)


def on_every_dataset(text: str, per_dataset: list[Claim]) -> Claim:
    """One statement judged on every data set: each data set's claim a part, the parts one
    Holm family (a statement refuted on one data set is refuted; one claim per statement, so
    that the register counts the statement once, not once per data set)."""
    return Claim(f"{text}: on every data set, each a part (Holm over them)", parts=per_dataset)


def layers_of(rows, dataset: str) -> list[str]:
    """The layers whose norms the runs on `dataset` tracked."""
    found = [r for r in rows if r["dataset"] == dataset]
    return list(found[0]["norm_growth_by_seed"][0]) if found else []


def ci_text(values, digits: int = 3) -> str:
    """mean [95 % CI] of per-seed values (`mean_effect`), or the one value for one seed."""
    effect = mean_effect(values)
    if effect.n <= 1:
        return f"{effect.estimate:.{digits}f}"
    return f"{effect.estimate:.{digits}f} [{effect.low:.{digits}f}, {effect.high:.{digits}f}]"


def rates_text(search: dict | None) -> str:
    """The rates a search tried, the chosen one in bold, and whether it is inside ("" for no
    search)."""
    if not search:
        return ""
    rates = ", ".join(f"**{r:g}**" if r == search["chosen"] else f"{r:g}" for r in search["tried"])
    return rates + ("" if search["interior"] else " (edge)")


def grid_text(row: dict) -> str:
    """`rates_text` of a row's search, or "given" for a rate given, not searched."""
    return rates_text(row.get("rate_search")) or "given"
