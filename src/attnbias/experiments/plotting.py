"""Figures of the experiments: mean ± std bands over seeds (saved by `figures.save_figure`).

Figures use matplotlib's constrained layout (titles, labels and legends never overlap or get
cut), describe each panel in its title, label both axes (`metric_label`: the one place that
turns a metric name into its mathtext symbol) and say in the figure title what lines and bands
are. Colours come from the Okabe–Ito palette, which stays distinct under the common colour-vision
deficiencies; an optimiser keeps its colour (and dash) in every figure (`style`). Non-finite
values (runs that diverged, means of groups with no finite run) are not drawn: a series with
nothing to draw is an empty entry in the legend, marked so, and a figure is made (and the
summary written) even when every run diverged.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler

from ..curves import Curves
from ..norm_names import MATRIX_NORM_MEANINGS
from ..store import StoreBusy, StoreReadOnly, UnsafeStore

logger = logging.getLogger(__name__)

# Decades a log-scale loss axis spans below its largest value: further down, the curves of the
# fast methods would squash the slow ones into flat lines (the fast ones leave the panel).
LOSS_DECADES = 12

# What drawing raises on data it cannot show (matplotlib's "Data cannot be log-scaled", ...).
UNDRAWABLE = (ValueError, OverflowError, FloatingPointError, np.linalg.LinAlgError)
# ValueErrors that are not about the data: the store refusing to write is never a notice.
STORE_REFUSALS = (UnsafeStore, StoreBusy, StoreReadOnly)

# Okabe & Ito (2008), "Color Universal Design": eight colours told apart with any common
# colour-vision deficiency. Yellow comes last: it is faint on white.
OKABE_ITO = {
    "black": "#000000",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "bluish green": "#009E73",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "reddish purple": "#CC79A7",
    "yellow": "#F0E442",
}
PALETTE = tuple(OKABE_ITO.values())
# Sequential colour map for heatmaps: perceptually uniform and readable with colour-vision
# deficiencies (and in greyscale).
HEATMAP_CMAP = "cividis"

# Optimiser name (lower case) → (colour, dash). A method that should behave like another
# shares its colour with another dash (Adam ~ SignGD, Muon ~ SpectralDescent), so the claim
# "behaves like" can be read off the lines; the names are those of the shipped configs.
_KNOWN = {
    "gd": ("black", "-"),
    "sgd": ("black", "-"),
    "ngd": ("blue", "-"),
    "sngd": ("blue", "-"),
    "ngd-mom": ("blue", "--"),
    "joint-ngd": ("reddish purple", "-"),
    "polyak": ("vermillion", "-"),
    "sps": ("vermillion", "-"),
    "signgd": ("orange", "-"),
    "adam": ("orange", "--"),
    "adam-decay": ("orange", ":"),
    "spectraldescent": ("bluish green", "-"),
    "muon": ("bluish green", "--"),
    "muon-f64": ("bluish green", "-."),
    "ns-f64": ("bluish green", ":"),
    "md": ("sky blue", "-"),
}
# ℓp mirror descent, by p (several p share panels in md-joint and text-md).
_MD = re.compile(r"ℓ([0-9.]+|inf)-md")
_MD_BY_P = {"1.1": "reddish purple", "1.75": "sky blue", "2": "vermillion", "3": "black"}
# Names outside the table take, per figure, the first colour (then dash) no earlier line took.
_DASHES = ("-", "--", ":", "-.")
_TAKEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

# rcParams read when `subplots` makes the axes: the palette for plain ax.plot calls too.
STYLE = {"axes.prop_cycle": cycler(color=PALETTE), "axes.labelsize": 8}
TICK_LABEL_SIZE = 7
TITLE_SIZE = 9


def known_style(name: str) -> dict | None:
    """{"color", "linestyle"} of an optimiser the palette table names, else None."""
    key = name.strip().lower()
    if key in _KNOWN:
        colour, dash = _KNOWN[key]
        return {"color": OKABE_ITO[colour], "linestyle": dash}
    match = _MD.fullmatch(key)
    if match and match.group(1) in _MD_BY_P:
        return {"color": OKABE_ITO[_MD_BY_P[match.group(1)]], "linestyle": "-"}
    return None


def style(name: str, fig=None) -> dict:
    """{"color", "linestyle"} of the optimiser `name`: fixed for the names of the shipped
    configs (same optimiser, same colour, in every figure); any other name gets the first
    palette colour (then dash) not yet used in `fig` (without a figure: the first colour)."""
    if not isinstance(name, str):
        raise TypeError(f"style: name must be a str, got {type(name).__name__}")
    fixed = known_style(name)
    taken = _TAKEN.setdefault(fig, {}) if fig is not None else {}
    if fixed is None:
        fixed = taken.get(name)
    if fixed is None:
        used = {(s["color"], s["linestyle"]) for s in taken.values()}
        free = [(c, d) for d in _DASHES for c in PALETTE if (c, d) not in used]
        colour, dash = free[0] if free else (PALETTE[0], "-")
        fixed = {"color": colour, "linestyle": dash}
    taken[name] = fixed
    return dict(fixed)


def _norm_symbol(label: str) -> str:
    """The subscript of a norm's label in mathtext: 2 → F (entrywise ℓ2 is Frobenius)."""
    return {"2": "F", "inf": r"\infty", "nuc": r"\mathrm{nuc}", "spectral": r"\mathrm{op}"}.get(
        label, label
    )


def _p(label: str) -> str:
    return r"\infty" if label == "inf" else label


def _svm(tensor: str, label: str) -> str:
    """The Att-SVM solution of a norm; the ℓ2 (Frobenius) one is *the* Att-SVM: no superscript."""
    return f"{tensor}_{{mm}}" if label == "2" else f"{tensor}_{{mm}}^{{{_norm_symbol(label)}}}"


_LABELS = {
    "loss": "training loss",
    "score/opt": "softmax score of optimal tokens",
    "score/selected": "softmax score of selected tokens",
    "prob": r"head probability $\sigma(y\,f)$",
    "misalignment": r"$1-\cos(W_t, W_{mm})$",
    "s/step": "seconds per step",
    "accuracy": "accuracy",
}
_FAMILIES = {  # metric prefix → mathtext of the norm / divergence / cosine it names
    "norm": lambda s: rf"$\|W_t\|_{{{_norm_symbol(s)}}}$",
    "norm_v": lambda s: rf"$\|v_t\|_{{{_p(s)}}}$",
    "divergence": lambda s: rf"$D_{{\psi_{{{_p(s)}}}}}(\hat W_{{mm}}, \hat W_t)$",
    "divergence_v": lambda s: rf"$D_{{\psi_{{{_p(s)}}}}}(\hat v_{{mm}}, \hat v_t)$",
    "alignment": lambda s: rf"$\cos(W_t, {_svm('W', s)})$",
    "alignment_v": lambda s: rf"$\cos(v_t, {_svm('v', s)})$",
    "gap": lambda s: rf"$1-\gamma_{{{_norm_symbol(s)}}}(W_t)/\gamma^*_{{{_norm_symbol(s)}}}$",
}


def figure_norm_name(label: str) -> str:
    """A norm's label ("2", "inf", "1.75", "spectral", "nuc") as a figure names it: a matrix
    norm by the first word of its meaning ("nuclear"), an ℓp norm in mathtext."""
    if label in MATRIX_NORM_MEANINGS:
        return MATRIX_NORM_MEANINGS[label].split(":")[0]
    return rf"$\ell_{{{_p(label)}}}$" + (" (F)" if label == "2" else "")


def metric_label(metric: str) -> str:
    """The axis label of a metric, in mathtext: "divergence/1.75" →
    $D_{\\psi_{1.75}}(\\hat W_{mm}, \\hat W_t)$, "norm/2" → $\\|W_t\\|_F$, "1-m" → 1 − (m's label);
    the alignment with the ℓ2 (Frobenius) SVM is written $\\cos(W_t, W_{mm})$. A name it does not
    know is returned as it is (a plain-text label)."""
    if not isinstance(metric, str):
        raise TypeError(f"metric_label: metric must be a str, got {type(metric).__name__}")
    if metric.startswith("1-"):
        inner = metric_label(metric[2:])
        mathtext = inner.startswith("$") and inner.count("$") == 2
        return f"$1-{inner[1:]}" if mathtext else f"1 − {inner}"
    if metric in _LABELS:
        return _LABELS[metric]
    family, _, suffix = metric.partition("/")
    if suffix and family in _FAMILIES:
        return _FAMILIES[family](suffix)
    return metric


def band(ax, curves: Curves, metric: str, label: str | None = None, color=None, log=(True, False)):
    """Mean over runs with a ±1 std band; x (and optionally y) on log scales.
    Step 0 is dropped on a log x-axis. On a log y-axis the band is mean ×/÷ (1 + std/mean), i.e.
    from mean²/(mean + std) to mean + std, which a log scale can draw. The line takes the
    optimiser's `style` when `label` names one and no colour is given; a panel without a y label
    gets the metric's (`metric_label`)."""
    steps, mean, std = curves.steps, curves.mean(metric), curves.std(metric)
    keep = steps > 0 if log[0] else np.ones(steps.shape, dtype=bool)
    look = style(label, ax.figure) if label is not None and color is None else {"color": color}
    with np.errstate(all="ignore"):  # overflow and NaN are masked below
        upper = mean + std
        lower = mean - std
        if log[1]:  # a band through zero cannot be drawn on a log scale
            lower = mean.clip(min=1e-300) ** 2 / upper.clip(min=1e-300)
    drawable = keep & np.isfinite(mean) & (mean > 0 if log[1] else True)
    ax.set_xscale("log" if log[0] else "linear")
    ax.set_yscale("log" if log[1] else "linear")
    if not ax.get_ylabel():
        ax.set_ylabel(metric_label(metric))
    if not drawable.any():  # a log axis cannot autoscale to nothing: an empty legend entry
        note = "nothing finite to draw"
        (line,) = ax.plot([], [], label=f"{label}: {note}" if label else note, **look)
        return line
    # NaN where nothing can be drawn: a gap in the line and the band, not a straight bridge
    (line,) = ax.plot(steps[keep], np.where(drawable, mean, np.nan)[keep], label=label, **look)
    band = drawable & np.isfinite(lower) & np.isfinite(upper)
    lower, upper = np.where(band, lower, np.nan), np.where(band, upper, np.nan)
    ax.fill_between(steps[keep], lower[keep], upper[keep], color=line.get_color(), alpha=0.2)
    return line


def runs_per_curve(groups: dict[str, Curves]) -> int:
    """Runs behind each mean curve drawn (the smallest group's, if they differ; groups whose
    runs all diverged draw nothing and do not count); 0 if no group has a run."""
    counts = [next(iter(c.values.values())).shape[0] for c in groups.values()]
    return min([n for n in counts if n > 0], default=0)


def band_note(runs: int) -> str:
    """What a figure's lines and shaded bands are, for its title."""
    if runs == 0:
        return "every run diverged: nothing to draw"
    if runs == 1:
        return "one run per curve"
    return f"lines: mean over {runs} seeds, shaded: ± 1 std"


def limit_decades(ax, decades: int = LOSS_DECADES) -> None:
    """Fit a log y-axis to its mean curves, showing at most `decades` decades below the top."""
    values = np.concatenate(
        [np.asarray(line.get_ydata(), dtype=float) for line in ax.lines] or [[]]
    )
    values = values[np.isfinite(values) & (values > 0)]
    if not values.size:  # nothing drawn: matplotlib's default limits
        return
    top = values.max()
    bottom = max(values.min(), top * 10.0**-decades)
    ax.set_ylim(bottom / 2, top * 2)


def panel(ax, title: str, xlabel: str = "step", ylabel: str | None = None) -> None:
    """Describe a panel by its title and label its axes: x (`xlabel`; "step" by default) and y
    (`ylabel`, a metric name or mathtext, when given: else what `band` set)."""
    ax.set_title(title, fontsize=TITLE_SIZE)
    ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(metric_label(ylabel))


def subplots(rows: int, cols: int, size=(3.2, 2.6), sharey=False):
    """A constrained-layout grid of rows × cols panels (size: one panel's inches) drawn in the
    package's `STYLE`; sharey as matplotlib's ("row", "all", True): panels that compare the same
    quantity share their y scale."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            rows,
            cols,
            figsize=(size[0] * cols, size[1] * rows),
            squeeze=False,
            layout="constrained",
            sharey=sharey,
        )
    for ax in axes.flat:  # kept for the ticks matplotlib makes when it draws
        ax.tick_params(which="both", labelsize=TICK_LABEL_SIZE)
    return fig, axes


LEGEND_INSIDE_AT_MOST = 6  # entries a panel's own legend holds without covering the curves


def legend(fig, ax, fontsize: int = 7) -> None:
    """The legend of `ax`'s curves: inside the panel while it is short, else below the whole
    figure in columns (a long legend inside one panel collapses it under constrained layout)."""
    handles, labels = ax.get_legend_handles_labels()
    if len(labels) <= LEGEND_INSIDE_AT_MOST:
        ax.legend(fontsize=fontsize)
        return
    columns = min(len(labels), max(1, round(fig.get_figwidth() / 2.6)))
    fig.legend(handles, labels, loc="outside lower center", ncols=columns, fontsize=fontsize)


def heatmap(
    ax, values, rows: list[str], cols: list[str], marked=(), log=True, fmt="{:.2g}",
    colorbar_label: str = "",
):  # fmt: skip
    """values[i, j] as a cell grid (rows × cols names on the axes), each cell annotated with its
    value; `marked`: (row, col) names whose cells get a thick outline (gid "marked-i-j", their
    indices, so a test or an SVG reader can find them). Colours on a log10 scale when `log`
    (values ≤ 0 or non-finite are left blank, annotated as they are)."""
    values = np.asarray(values, dtype=float)
    if values.shape != (len(rows), len(cols)):
        raise ValueError(f"heatmap: values has shape {values.shape}, names {len(rows)}×{len(cols)}")
    shown = np.ma.masked_invalid(np.log10(np.where(values > 0, values, np.nan)) if log else values)
    image = ax.imshow(shown, cmap=HEATMAP_CMAP, aspect="auto")
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(rows)), rows)
    low, high = image.get_clim()
    for i, j in np.ndindex(values.shape):
        dark = not np.ma.is_masked(shown[i, j]) and shown[i, j] < (low + high) / 2
        ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center", fontsize=7,
                color="white" if dark else "black")  # fmt: skip
    for r, c in marked:
        i, j = rows.index(r), cols.index(c)
        outline = plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2.5, gid=f"marked-{i}-{j}")
        ax.add_patch(outline).set_edgecolor(OKABE_ITO["vermillion"])
    bar = ax.figure.colorbar(image, ax=ax)
    bar.set_label(f"$\\log_{{10}}$ {colorbar_label}" if log else colorbar_label, fontsize=8)
    bar.ax.tick_params(labelsize=TICK_LABEL_SIZE)
    return image


def with_figures(summary: dict, draw: Callable[[], list[str]]) -> dict:
    """The summary, made before any figure (its claims and counts need none), with the files
    `draw()` writes as "figures". Figures that cannot be drawn from these runs (all diverged,
    nothing finite on a log axis) are left out, said in one line of "figure_notices" (and
    logged as a warning), and the summary is returned all the same."""
    before = set(plt.get_fignums())
    try:
        # matplotlib's autoscaling of a log axis overflows harmlessly near the float range's
        # end (runs at rates of 1e300): drawing computes no result, so numpy stays quiet here
        with np.errstate(over="ignore"):
            return {**summary, "figures": draw()}
    except UNDRAWABLE as err:
        for number in set(plt.get_fignums()) - before:
            plt.close(number)
        if isinstance(err, STORE_REFUSALS):
            raise
        diverged, runs = len(summary.get("diverged", [])), summary.get("runs")
        counted = f" ({diverged} of {runs} runs diverged)" if diverged else ""
        notice = f"figures not drawn{counted}: {' '.join(str(err).split())}"
        logger.warning("%s", notice)
        notices = [*summary.get("figure_notices", []), notice]
        return {**summary, "figures": [], "figure_notices": notices}
