"""text-md's figures: accuracy along the runs, the trained weights' sizes, key-word attention
and the paired differences from ℓ2 that the verdicts read."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..figures import save_figure
from ..store import DIVERGED
from . import plotting
from .real_runs import series
from .text_md_tables import ABSOLUTE_THRESHOLD, arm_name, effect_list


def plot_accuracy(config, records, references, out: Path) -> list[str]:
    """Validation (left) and test (right) accuracy of every run against steps, the chosen
    checkpoint of each marked, with the reference models as horizontal lines."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True, layout="constrained")
    for p in map(float, config["ps"]):
        colour = plotting.style(arm_name(p), fig)["color"]
        runs = [r for (v, q, _), r in records.items() if v == "seeds" and q == p]
        for j, r in enumerate(runs):
            chosen = r.info.get("chosen_step")
            for ax, metric in zip(axes, ("val_accuracy", "test_accuracy")):
                steps, values = series(r, metric)
                ax.plot(steps, 100 * values, color=colour, lw=0.8,
                        alpha=0.7, label=arm_name(p) if j == 0 else None)  # fmt: skip
                at = np.flatnonzero(steps == chosen)
                if at.size:
                    ax.plot(steps[at], 100 * values[at], "o", color=colour, ms=4)
    styles = iter(("--", ":", "-."))
    for name, ref in references.items():
        if name == "run_keys":
            continue
        style = next(styles, "--")
        for ax, key in zip(axes, ("val_accuracy", "test_accuracy")):
            ax.axhline(ref[key], color="k", ls=style, lw=1,
                       label=f"{ref['label']} ({ref[key]:.1f})")  # fmt: skip
    axes[0].set(xlabel="step", ylabel="accuracy (%)", title="validation (selects; dots: chosen)")
    axes[1].set(xlabel="step", title="test (read at the chosen checkpoint only)")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.suptitle("text-md: every run with different initial weights; lines: reference models")
    return save_figure(fig, out, "text_md_accuracy")


def plot_weights(config, records, main, out: Path) -> list[str]:
    """|w| of the trained K, Q, V (all seeds, blocks), with 0.06 and the mapped threshold."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5), sharey=True)
    for ax, m in zip(axes, "KQV"):
        for p in map(float, config["ps"]):
            w = [r.arrays[m] for (v, q, _), r in records.items()
                 if v == "seeds" and q == p and r.status != DIVERGED]  # fmt: skip
            if not w:
                continue
            w = np.concatenate(w)
            share = np.full(w.size, 1.0 / w.size)  # bar height = share of entries in the bin
            ax.hist(np.abs(w) + 1e-12, bins=np.logspace(-8, 0.5, 60), weights=share,
                    histtype="step", label=arm_name(p))  # fmt: skip
        ax.axvline(ABSOLUTE_THRESHOLD, color="k", ls="--", lw=1)
        thresholds = [np.nanmean(c["values"][f"threshold_{m}"]) for c in main.values()]
        if thresholds and np.isfinite(thresholds).any():
            ax.axvline(float(np.nanmean(thresholds)), color="k", ls=":", lw=1)
        ax.set(xscale="log", xlabel=f"|{m} weight| (dashed: 0.06; dotted: mapped)",
               title=f"{m} weights (all seeds, blocks)")  # fmt: skip
    axes[0].set_ylabel("share of entries")
    axes[0].legend()
    return save_figure(fig, out, "text_md_weight_histograms")


def plot_keyword(main: dict[float, dict], out: Path) -> list[str]:
    """Key-word attention per p, mean with its 95 % CI over seeds, and chance."""
    import matplotlib.pyplot as plt

    fig, (ax_norm, ax_raw) = plt.subplots(1, 2, figsize=(8, 3.5), layout="constrained")
    ps = list(main)
    labels = [f"ℓ{p:g}" for p in ps]
    for ax, key, title in ((ax_norm, "keyword_normalised", "min–max normalised (paper)"),
                           (ax_raw, "keyword_raw", "raw attention")):  # fmt: skip
        effects = [effect_list(main[p]["values"][key]) for p in ps]
        means = np.array([e[0] for e in effects])
        low = np.array([e[1] if math.isfinite(e[1]) else e[0] for e in effects])
        high = np.array([e[2] if math.isfinite(e[2]) else e[0] for e in effects])
        colours = [plotting.style(arm_name(p))["color"] for p in ps]
        ax.bar(labels, means, yerr=[means - low, high - means], capsize=4, color=colours)
        chance = np.nanmean([np.nanmean(main[p]["values"][key.replace("keyword_",
                             "keyword_chance_")]) for p in ps])  # fmt: skip
        ax.axhline(chance, color="k", ls="--", lw=1, label=f"chance ({chance:.3f})")
        ax.set_title(title)
        ax.legend()
    ax_norm.set_ylabel("[CLS] attention on the key word")
    ax_raw.set_ylabel("[CLS] attention on the key word (raw)")
    fig.suptitle("key-word attention, last layer: mean and 95 % CI over seeds")
    return save_figure(fig, out, "text_md_keyword_attention")


def plot_paired(paired: list[dict], out: Path) -> list[str]:
    """Each paired difference from ℓ2 with its 95 % CI (what the verdicts read)."""
    import matplotlib.pyplot as plt

    if not paired:  # one p: nothing to compare
        return []
    keys = [("test_accuracy", "test accuracy (pp)"), ("keyword_normalised", "key word (norm.)"),
            *((f"above_init_{m}", f"count > threshold, {m}") for m in "KQV")]  # fmt: skip
    fig, axes = plt.subplots(1, len(keys), figsize=(3 * len(keys), 3), layout="constrained")
    for ax, (key, title) in zip(axes, keys):
        for y, row in enumerate(paired):
            mean, low, high, _ = row[key]
            low = low if math.isfinite(low) else mean
            high = high if math.isfinite(high) else mean
            ax.errorbar([mean], [y], xerr=[[mean - low], [high - mean]], fmt="o", capsize=4)
        ax.axvline(0.0, color="k", lw=1)
        ax.set(
            title=title,
            xlabel="difference from ℓ2-MD",
            yticks=range(len(paired)),
            yticklabels=[r["comparison"] for r in paired],
            ylim=(-0.5, len(paired) - 0.5),
        )
        ax.tick_params(axis="y", labelsize=7)
    fig.suptitle("paired differences from ℓ2-MD (mean over seeds, 95 % paired t interval)")
    return save_figure(fig, out, "text_md_paired_differences")
