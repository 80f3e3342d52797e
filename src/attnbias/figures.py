"""Saving figures: every figure of the package is written by `save_figure`, as PNG (what the
Markdown reports embed) and, when asked for, as PDF and SVG (vector, for a paper): the formats
the results store publishes (`store.FIGURE_SUFFIXES`). A sweep draws PNG alone by default
(each vector format costs another rendering of every figure); `drawing_formats` (the command
line's `--figure-formats png,pdf,svg`) chooses others for what is drawn inside it."""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display is needed, or assumed

import matplotlib.pyplot as plt
from matplotlib.ticker import LogLocator, NullLocator

from .store import FIGURE_SUFFIXES, write_into

logger = logging.getLogger(__name__)

FORMATS = tuple(suffix[1:] for suffix in FIGURE_SUFFIXES)
# What a run draws unless asked for more: the PNG the reports embed.
DEFAULT_FORMATS = ("png",)
_formats = contextvars.ContextVar("figure_formats", default=DEFAULT_FORMATS)
# Minor ticks of a log axis at 2 and 5 times each power of ten: matplotlib's 2, 3, ..., 9 made
# the minor ticks about a third of the drawing time of md-local's twelve log-log panels.
LOG_MINOR_SUBS = (2.0, 5.0)
# No dates and a fixed SVG id salt: the same figure gives the same bytes (and sha256) each time.
_METADATA = {"png": {}, "pdf": {"CreationDate": None, "ModDate": None}, "svg": {"Date": None}}


def checked_formats(formats, name: str = "formats") -> tuple[str, ...]:
    """`formats` as a tuple of some of FORMATS (a comma-separated string is split), in the
    order given, each once; TypeError or ValueError naming `name` otherwise."""
    if isinstance(formats, str):
        formats = [f.strip() for f in formats.split(",")]
    if not isinstance(formats, Iterable) or not all(isinstance(f, str) for f in formats):
        raise TypeError(f"{name} must be format names, some of {FORMATS}, got {formats!r}")
    chosen = tuple(dict.fromkeys(formats))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise ValueError(
            f"{name} must be some of {', '.join(FORMATS)}, comma-separated, got {unknown or ''!r}"
        )
    return chosen


def current_formats() -> tuple[str, ...]:
    """The formats `save_figure` draws when it is not told: DEFAULT_FORMATS, or those of the
    innermost `drawing_formats`."""
    return _formats.get()


@contextlib.contextmanager
def drawing_formats(formats) -> Iterator[tuple[str, ...]]:
    """Inside it, `save_figure` draws `formats` (checked: `checked_formats`) by default."""
    token = _formats.set(checked_formats(formats))
    try:
        yield _formats.get()
    finally:
        _formats.reset(token)


def lacking_formats(paths: Iterable[str], formats: Iterable[str]) -> bool:
    """Whether some figure among `paths` (files named NAME.FORMAT) lacks one of `formats`."""
    drawn: dict[str, set[str]] = {}
    for path in paths:
        drawn.setdefault(str(Path(path).with_suffix("")), set()).add(Path(path).suffix[1:])
    return any(not set(formats) <= found for found in drawn.values())


def save_figure(fig, out: str | Path, name: str, dpi: int = 130, formats=None) -> list[str]:
    """Write out/name.<format> for each of `formats` (default: `current_formats()`, PNG
    unless a `drawing_formats` chose others), close the figure; returns their paths. Each
    file is written fresh and renamed in through a handle of `out` (store.write_into: never
    through a link; a staging directory through its store's handles). The layout is computed
    once, at `dpi`, and then frozen: each format costs one rendering, not another layout pass
    and a draw without rendering (the PNG is the same bytes as savefig's own)."""
    formats = current_formats() if formats is None else checked_formats(formats)
    out = Path(out)
    paths = [out / f"{name}.{ext}" for ext in formats]
    logger.info("drawing figure %s (%s)", name, ", ".join(formats))
    try:
        thin_log_minor_ticks(fig)
        engine = fig.get_layout_engine()
        if engine is not None:
            # at the saving dpi, as savefig's own pass would; with no engine left (not even
            # "none"'s placeholder) savefig skips its draw without rendering before the real one
            fig.set_dpi(dpi)
            with unlabelled_minor_ticks_aside(fig):
                engine.execute(fig)
            no_rc_layout = {"figure.autolayout": False, "figure.constrained_layout.use": False}
            with plt.rc_context(no_rc_layout):
                fig.set_layout_engine(None)
        with plt.rc_context({"svg.hashsalt": name}):
            for path, ext in zip(paths, formats):
                write_into(out, path.name, writer=partial(_savefig, fig, ext, dpi))
    finally:
        plt.close(fig)
    return [str(p) for p in paths]


def _savefig(fig, ext: str, dpi: int, f) -> None:
    fig.savefig(f, format=ext, dpi=dpi, metadata=_METADATA[ext])


@contextlib.contextmanager
def unlabelled_minor_ticks_aside(fig) -> Iterator[None]:
    """Inside it, no minor ticks on the axes whose minor ticks carry no label (a log axis over
    more than a decade): the layout leaves room for labels, and the major ticks' marks are
    longer, so they change no margin (tests/test_figures.py: the same PNG bytes); they were
    half of the layout's time in md-local's twelve log-log panels (0.5 of 1.0 s: each tick is
    an object with transforms of its own). Put back after, for drawing."""
    # shared axes share one locator: it is set aside for all of them or for none
    sharing: dict[int, list] = {}
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            sharing.setdefault(id(axis.get_minor_locator()), []).append(axis)
    aside = []
    for axes in sharing.values():
        locator = axes[0].get_minor_locator()
        if isinstance(locator, NullLocator) or any(
            any(axis.get_minor_formatter().format_ticks(axis.get_minorticklocs()))
            or minor_labels_place(axis)
            for axis in axes
        ):
            continue
        aside.append((axes[0], locator, locator.axis))
        axes[0].set_minor_locator(NullLocator())
    try:
        yield
    finally:
        for axis, locator, owner in aside:
            axis.set_minor_locator(locator)
            locator.set_axis(owner)  # the axis it had sizes its ticks (LogLocator's stride)


def minor_labels_place(axis) -> bool:
    """Whether the minor ticks' (empty) labels can move the axis label: matplotlib puts it
    outside every visible tick label's box, so where the major labels of a side are hidden and
    the minor ones are not, their empty boxes are what it goes outside of."""
    major, minor = axis.get_major_ticks(1)[0], axis.get_minor_ticks(1)[0]
    return any(
        getattr(minor, side).get_visible() and not getattr(major, side).get_visible()
        for side in ("label1", "label2")
    )


def thin_log_minor_ticks(fig) -> None:
    """Minor ticks at LOG_MINOR_SUBS on every log axis that has matplotlib's default minor
    locator (a locator set by the figure's code is kept)."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log" and type(axis.get_minor_locator()) is LogLocator:
                axis.set_minor_locator(LogLocator(subs=LOG_MINOR_SUBS))
