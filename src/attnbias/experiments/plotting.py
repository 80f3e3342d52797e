"""Figures of the experiments: mean ± std bands over seeds (saved by `figures.save_figure`).

Figures use matplotlib's constrained layout (titles, labels and legends never overlap or get
cut), describe each panel in its title and say in the figure title what lines and bands are.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from .runs import Curves

# Decades a log-scale loss axis spans below its largest value: further down, the curves of the
# fast methods would squash the slow ones into flat lines (the fast ones leave the panel).
LOSS_DECADES = 12


def band(ax, curves: Curves, metric: str, label: str | None = None, color=None, log=(True, False)):
    """Mean over runs with a ±1 std band; x (and optionally y) on log scales.
    Step 0 is dropped on a log x-axis. On a log y-axis the band is mean ×/÷ (1 + std/mean), i.e.
    from mean²/(mean + std) to mean + std, which a log scale can draw."""
    steps, mean, std = curves.steps, curves.mean(metric), curves.std(metric)
    keep = steps > 0 if log[0] else slice(None)
    (line,) = ax.plot(steps[keep], mean[keep], label=label, color=color)
    lower = mean - std
    if log[1]:  # a band through zero cannot be drawn on a log scale
        lower = mean.clip(min=1e-300) ** 2 / (mean + std).clip(min=1e-300)
    ax.fill_between(steps[keep], lower[keep], (mean + std)[keep], color=line.get_color(), alpha=0.2)
    ax.set_xscale("log" if log[0] else "linear")
    ax.set_yscale("log" if log[1] else "linear")
    return line


def runs_per_curve(groups: dict[str, Curves]) -> int:
    """Runs behind each mean curve (the smallest group's, if they differ)."""
    return min(next(iter(c.values.values())).shape[0] for c in groups.values())


def band_note(runs: int) -> str:
    """What a figure's lines and shaded bands are, for its title."""
    if runs == 1:
        return "one run per curve"
    return f"lines: mean over {runs} seeds, shaded: ± 1 std"


def limit_decades(ax, decades: int = LOSS_DECADES) -> None:
    """Fit a log y-axis to its mean curves, showing at most `decades` decades below the top."""
    values = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in ax.lines])
    values = values[np.isfinite(values) & (values > 0)]
    top = values.max()
    bottom = max(values.min(), top * 10.0**-decades)
    ax.set_ylim(bottom / 2, top * 2)


def panel(ax, title: str, xlabel: str = "step") -> None:
    """Describe a panel by its title (long y-labels get cut on small panels)."""
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)


def subplots(rows: int, cols: int, size=(3.2, 2.6)):
    return plt.subplots(
        rows,
        cols,
        figsize=(size[0] * cols, size[1] * rows),
        squeeze=False,
        layout="constrained",
    )
