"""Figures of the experiments: mean ± std bands over seeds, saved as PNG and PDF."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from .runs import Curves


def band(ax, curves: Curves, metric: str, label: str | None = None, color=None, log=(True, False)):
    """Mean over runs with a ±1 std band; x (and optionally y) on log scales.
    Step 0 is dropped on a log x-axis."""
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


def save(fig, out: Path, name: str) -> list[str]:
    """Write out/name.png and out/name.pdf; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.{ext}" for ext in ("png", "pdf")]
    fig.tight_layout()
    for path in paths:
        fig.savefig(path, dpi=130)
    plt.close(fig)
    return [str(p) for p in paths]


def subplots(rows: int, cols: int, size=(3.2, 2.6)):
    return plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows), squeeze=False)
