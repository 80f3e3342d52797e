"""Saving figures: every figure of the package is written by `save_figure`, as PNG (for the
Markdown reports) and as PDF and SVG (vector, for a paper), in the formats the results store
publishes (`store.FIGURE_SUFFIXES`)."""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display is needed, or assumed

import matplotlib.pyplot as plt
from matplotlib.ticker import LogLocator

from .store import FIGURE_SUFFIXES, write_into

logger = logging.getLogger(__name__)

FORMATS = tuple(suffix[1:] for suffix in FIGURE_SUFFIXES)
# Minor ticks of a log axis at 2 and 5 times each power of ten: matplotlib's 2, 3, ..., 9 made
# the minor ticks about a third of the drawing time of md-local's twelve log-log panels.
LOG_MINOR_SUBS = (2.0, 5.0)
# No dates and a fixed SVG id salt: the same figure gives the same bytes (and sha256) each time.
_METADATA = {"png": {}, "pdf": {"CreationDate": None, "ModDate": None}, "svg": {"Date": None}}


def save_figure(fig, out: str | Path, name: str, dpi: int = 130, formats=FORMATS) -> list[str]:
    """Write out/name.<format> for each of `formats` (default: png, pdf, svg), close the
    figure; returns their paths. Each file is written fresh and renamed in through a handle of
    `out` (store.write_into: never through a link; a staging directory through its store's
    handles). The layout is computed once and then frozen, so each further format costs one
    rendering, not another layout pass."""
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"save_figure: formats must be some of {FORMATS}, got {formats!r}")
    out = Path(out)
    paths = [out / f"{name}.{ext}" for ext in formats]
    logger.info("drawing figure %s (%s)", name, ", ".join(formats))
    try:
        thin_log_minor_ticks(fig)
        engine = fig.get_layout_engine()
        if engine is not None and len(formats) > 1:
            engine.execute(fig)
            fig.set_layout_engine("none")
        with plt.rc_context({"svg.hashsalt": name}):
            for path, ext in zip(paths, formats):
                write_into(out, path.name, writer=partial(_savefig, fig, ext, dpi))
    finally:
        plt.close(fig)
    return [str(p) for p in paths]


def _savefig(fig, ext: str, dpi: int, f) -> None:
    fig.savefig(f, format=ext, dpi=dpi, metadata=_METADATA[ext])


def thin_log_minor_ticks(fig) -> None:
    """Minor ticks at LOG_MINOR_SUBS on every log axis that has matplotlib's default minor
    locator (a locator set by the figure's code is kept)."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log" and type(axis.get_minor_locator()) is LogLocator:
                axis.set_minor_locator(LogLocator(subs=LOG_MINOR_SUBS))
