"""Saving figures: every figure of the package is written by `save_figure`, as PNG and PDF."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display is needed, or assumed

import matplotlib.pyplot as plt


def save_figure(fig, out: str | Path, name: str, dpi: int = 130) -> list[str]:
    """Write out/name.png and out/name.pdf, close the figure; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.{ext}" for ext in ("png", "pdf")]
    for path in paths:
        fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return [str(p) for p in paths]
