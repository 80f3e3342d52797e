"""Figures ready for a paper (issue 21, point 4): mathtext labels that parse, both axes labelled
on every panel, the Okabe–Ito palette with one style per optimiser in every figure, shared y
scales where panels compare one quantity, PDF and SVG beside every PNG (published and listed in
the manifest like it), and the atlas as a heatmap with each optimiser's own norm marked."""

from __future__ import annotations

import hashlib
import json
import warnings
from contextlib import nullcontext
from pathlib import Path

import matplotlib.figure
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.mathtext import MathTextParser

from attnbias import figures
from attnbias.curves import Curves
from attnbias.experiments import SYNTHETIC, atlas, load_config, plotting, run_experiment
from attnbias.figures import (
    FORMATS,
    drawing_formats,
    save_figure,
    thin_log_minor_ticks,
    unlabelled_minor_ticks_aside,
)
from attnbias.store import FIGURE_SUFFIXES, MANIFEST, manifest_problem
from test_experiments import TINY

pytestmark = pytest.mark.usefixtures("one_thread")

PALETTE = {to_hex(c) for c in plotting.PALETTE}


@pytest.fixture
def saved(monkeypatch):
    """Every figure saved while the test runs, with the formats it was saved in (save_figure
    gives savefig an open file and the format)."""
    figures: dict[matplotlib.figure.Figure, list[str]] = {}
    original = matplotlib.figure.Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        figures.setdefault(self, []).append(kwargs.get("format") or Path(fname).suffix[1:])
        return original(self, fname, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    return figures


def problems(fig) -> list[str]:
    """What keeps a figure from a paper: a panel without both axis labels (a colour bar needs
    its one), a series in a colour outside the palette."""
    found = []
    for ax in fig.axes:
        if not ax.axison:  # a cell left empty, or holding only a legend
            continue
        name = ax.get_title() or ax.get_label()
        if ax.get_label() == "<colorbar>":
            if not (ax.get_ylabel() or ax.get_xlabel()):
                found.append(f"{name}: colour bar without a label")
            continue
        found += [f"{name}: no {xy} label" for xy in "xy" if not getattr(ax, f"get_{xy}label")()]
        for line in ax.lines:
            if not line.get_label().startswith("_") and to_hex(line.get_color()) not in PALETTE:
                found.append(f"{name}: {line.get_label()!r} in {to_hex(line.get_color())}")
    return found


def check_outputs(summary: dict, out: Path) -> None:
    """Each figure in every format, published (linked from the experiment directory) and
    listed with its sha256 in the publication's manifest."""
    stems = {Path(f).stem for f in summary["figures"]}
    assert stems and {Path(f).suffix for f in summary["figures"]} == set(FIGURE_SUFFIXES)
    published = (out / "latest").resolve()
    assert manifest_problem(published) is None
    listed = json.loads((published / MANIFEST).read_text())["files"]
    for stem in stems:
        for suffix in FIGURE_SUFFIXES:
            link = out / f"{stem}{suffix}"
            assert link.is_symlink() and link.stat().st_size > 0, link
            data = (published / link.name).read_bytes()
            assert listed[link.name]["sha256"] == hashlib.sha256(data).hexdigest()


def run_tiny(name: str, tmp_path: Path, saved) -> dict:
    config = load_config(name, quick=True, overrides=TINY[name])
    summary = run_experiment(config, tmp_path, figure_formats=FORMATS)  # PNG alone by default
    assert saved, "no figure was saved"
    for fig, formats in saved.items():
        assert problems(fig) == [], formats
        assert formats == list(FORMATS)  # mathtext drawn 3 times
    check_outputs(summary, tmp_path)  # run_experiment's out: the experiment directory
    return summary


@pytest.mark.slow
def test_md_local_figures_are_labelled_in_the_palette_and_published(tmp_path, saved):
    run_tiny("md-local", tmp_path, saved)
    (fig,) = saved
    grid = np.array(fig.axes).reshape(4, 3)  # 3 × 3 divergences + the zero-init row
    for row in grid:  # a row compares one quantity: one y scale
        assert all(row[0].get_shared_y_axes().joined(row[0], ax) for ax in row[1:])
    assert not grid[0, 0].get_shared_y_axes().joined(grid[0, 0], grid[1, 0])
    assert grid[0, 0].get_ylabel() == r"$D_{\psi_{1.75}}(\hat W_{mm}, \hat W_t)$"


@pytest.mark.slow
def test_atlas_figures_are_published_with_the_gaps_of_the_summary(tmp_path, saved):
    summary = run_tiny("atlas", tmp_path, saved)
    labels = load_config("atlas", quick=True, overrides=TINY["atlas"]).labels
    heatmap = next(iter(saved)).axes[0]
    names = [t.get_text() for t in heatmap.get_yticklabels()]
    gaps = np.array([[summary["final_gaps"][lab][n] for lab in labels] for n in names])
    np.testing.assert_allclose(heatmap.get_images()[0].get_array(), np.log10(gaps))


def test_atlas_heatmap_marks_each_own_norm_cell(tmp_path, saved):
    steps = np.array([0, 10, 100])
    labels, names = ["2", "inf", "spectral"], ["NGD", "SignGD", "Adam"]
    own = {"NGD": "2", "SignGD": "inf"}
    finals = {("NGD", "2"): 0.01, ("SignGD", "inf"): 0.02}  # the rest end at 0.5
    groups = {
        name: Curves(steps, {
            f"gap/{lab}": np.array([[1.0, 0.7, finals.get((name, lab), 0.5) * f] for f in (1, 3)])
            for lab in labels
        })
        for name in names
    }  # fmt: skip
    with drawing_formats(FORMATS):
        paths = atlas.figure(groups, labels, own, tmp_path)
    assert {Path(p).name for p in paths} == {
        f"{stem}.{ext}" for stem in ("atlas", "atlas-curves") for ext in FORMATS
    }
    heatmap, curves = saved
    assert problems(heatmap) == [] and problems(curves) == []
    ax = heatmap.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == names
    marked = {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").startswith("marked-")}
    assert set(marked) == {"marked-0-0", "marked-1-1"}  # NGD × ℓ2, SignGD × ℓ∞; Adam owns none
    for gid, patch in marked.items():  # the outline sits on its cell
        i, j = (int(k) for k in gid.split("-")[1:])
        assert patch.get_xy() == (j - 0.5, i - 0.5)
    medians = np.array([[finals.get((n, lab), 0.5) * 2 for lab in labels] for n in names])
    np.testing.assert_allclose(ax.get_images()[0].get_array(), np.log10(medians))
    svg = (tmp_path / "atlas.svg").read_text()
    assert all(f'id="{gid}"' in svg for gid in marked)
    panels = [a for a in curves.axes if a.axison]
    assert len(panels) == len(labels)  # small multiples: one panel per norm, one y scale
    assert all(panels[0].get_shared_y_axes().joined(panels[0], a) for a in panels[1:])
    thick = [line.get_linewidth() for line in panels[0].lines if line.get_label() == "NGD"]
    assert thick and thick[0] > plotting.plt.rcParams["lines.linewidth"]  # owner drawn thick


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in SYNTHETIC if n not in ("md-local", "atlas")])
def test_every_synthetic_figure_is_ready_for_a_paper(name, tmp_path, saved):
    run_tiny(name, tmp_path, saved)


@pytest.mark.parametrize(
    ("metric", "label"),
    [
        ("divergence/1.75", r"$D_{\psi_{1.75}}(\hat W_{mm}, \hat W_t)$"),
        ("divergence_v/3", r"$D_{\psi_{3}}(\hat v_{mm}, \hat v_t)$"),
        ("1-alignment/2", r"$1-\cos(W_t, W_{mm})$"),
        ("alignment/nuc", r"$\cos(W_t, W_{mm}^{\mathrm{nuc}})$"),
        ("norm/2", r"$\|W_t\|_{F}$"),
        ("norm/inf", r"$\|W_t\|_{\infty}$"),
        ("norm_v/2", r"$\|v_t\|_{2}$"),
        ("gap/spectral", r"$1-\gamma_{\mathrm{op}}(W_t)/\gamma^*_{\mathrm{op}}$"),
        ("1-score/opt", "1 − softmax score of optimal tokens"),
        ("loss", "training loss"),
        ("some/new", "some/new"),  # unknown: shown as it is
    ],
)
def test_metric_labels_are_mathtext_that_parses(metric, label):
    assert plotting.metric_label(metric) == label
    if "$" in label:
        MathTextParser("path").parse(label)  # raises ValueError on bad mathtext


def test_metric_label_refuses_a_non_string():
    with pytest.raises(TypeError, match="metric must be a str"):
        plotting.metric_label(2)


def test_each_optimiser_keeps_one_style_and_no_two_share_one_in_a_figure():
    one, other = matplotlib.figure.Figure(), matplotlib.figure.Figure()
    assert plotting.style("NGD", one) == plotting.style("NGD", other) == plotting.style("ngd")
    assert plotting.style("Adam")["color"] == plotting.style("SignGD")["color"]  # Adam ~ SignGD
    for name in SYNTHETIC:
        algorithms = getattr(load_config(name, quick=True), "algorithms", None) or []
        names = [a.name for a in algorithms]
        fig = matplotlib.figure.Figure()
        looks = [tuple(plotting.style(n, fig).values()) for n in names]
        assert len(set(looks)) == len(looks), (name, names, looks)
        assert {to_hex(c) for c, _ in looks} <= PALETTE
    # names outside the table: the next free colour of their figure, kept for that figure
    fig = matplotlib.figure.Figure()
    first = plotting.style("NGD", fig)
    new = [plotting.style(f"Polyak cap {k}", fig) for k in range(3)]
    assert first not in new and len({tuple(s.values()) for s in new}) == 3
    assert plotting.style("Polyak cap 0", fig) == new[0]


def test_band_labels_the_y_axis_and_colours_by_optimiser():
    _, axes = plotting.subplots(1, 1)
    steps = np.array([0, 1, 10, 100])
    curves = Curves(steps, {"gap/2": np.array([[1.0, 0.5, 0.1, 0.01]])})
    line = plotting.band(axes[0, 0], curves, "gap/2", label="SignGD", log=(True, True))
    assert axes[0, 0].get_ylabel() == plotting.metric_label("gap/2")
    assert to_hex(line.get_color()) == plotting.OKABE_ITO["orange"].lower()


def test_vector_files_beside_the_png_same_bytes_each_time(tmp_path):
    def draw():
        fig, axes = plotting.subplots(1, 1)
        for ax in axes.flat:
            ax.plot([1, 10, 100], [1e-3, 1e-1, 1])
            plotting.panel(ax, "t", ylabel="norm/2")
            ax.set_xscale("log")
            ax.set_yscale("log")
        return fig

    paths = save_figure(draw(), tmp_path / "a", "f", formats=FORMATS)
    assert [Path(p).suffix for p in paths] == list(FIGURE_SUFFIXES) == [".png", ".pdf", ".svg"]
    again = save_figure(draw(), tmp_path / "b", "f", formats=FORMATS)
    for first, second in zip(paths, again):  # no dates, no random ids: reproducible bytes
        assert Path(first).read_bytes() == Path(second).read_bytes(), first
    assert save_figure(draw(), tmp_path, "g", formats=("svg",)) == [str(tmp_path / "g.svg")]
    with pytest.raises(ValueError, match="formats must be some of"):
        save_figure(draw(), tmp_path, "h", formats=("jpg",))


def test_log_axes_get_minor_ticks_at_2_and_5_only():
    fig, axes = plotting.subplots(1, 1)
    ax = axes[0, 0]
    ax.plot([1, 1000], [1, 1000])
    ax.set_yscale("log")
    thin_log_minor_ticks(fig)
    minor = ax.yaxis.get_minorticklocs()
    inside = minor[(minor > 1) & (minor < 10)]
    np.testing.assert_allclose(inside, [2.0, 5.0])
    assert ax.xaxis.get_minor_locator().__class__.__name__ != "LogLocator"  # linear: untouched


@pytest.mark.parametrize(
    ("case", "aside"),
    [("wide", True), ("narrow", False), ("major labels hidden", False), ("unequal shared", True)],
)
def test_the_layout_leaves_out_only_minor_ticks_without_labels_and_draws_them(
    tmp_path, monkeypatch, case, aside
):
    """Minor ticks that carry no label are set aside while the layout is computed (a log axis
    over more than a decade), and put back for drawing: the PNG is the same bytes as with every
    minor tick in the layout, panels of unequal widths sharing the axis included. They stay
    where they carry labels (under a decade) or where their empty labels place the axis label
    (the major labels of that side hidden)."""

    def draw():
        ratios = [1, 4] if case == "unequal shared" else [1, 1]
        fig, axes = plt.subplots(2, 2, sharey="row", layout="constrained", width_ratios=ratios)
        decades = 0.3 if case == "narrow" else 4
        for ax in axes.flat:
            ax.plot([1, 10**decades], [1, 10**decades])
            plotting.panel(ax, "t", ylabel="norm/2")
            ax.set_xscale("log")
            ax.set_yscale("log")
            if case == "major labels hidden":
                ax.tick_params(labelleft=False)  # the major ones only
        thin_log_minor_ticks(fig)
        return fig

    fig = draw()
    with unlabelled_minor_ticks_aside(fig):
        minor_inside = [len(ax.yaxis.get_minorticklocs()) for ax in fig.axes]
    assert all(m == 0 for m in minor_inside) == aside, minor_inside
    assert all(len(ax.yaxis.get_minorticklocs()) > 0 for ax in fig.axes)  # put back
    saved = Path(save_figure(fig, tmp_path, "aside")[0]).read_bytes()

    monkeypatch.setattr(figures, "unlabelled_minor_ticks_aside", lambda fig: nullcontext())
    whole = Path(save_figure(draw(), tmp_path, "whole")[0]).read_bytes()
    assert saved == whole


def test_heatmap_refuses_values_that_do_not_match_the_names():
    _, axes = plotting.subplots(1, 1)
    with pytest.raises(ValueError, match="values has shape"):
        plotting.heatmap(axes[0, 0], np.ones((2, 3)), ["a", "b"], ["x", "y"])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # medians of the empty groups
def test_atlas_figure_with_every_run_diverged_still_draws(tmp_path):
    steps = np.array([0, 1, 10])
    empty = {f"gap/{lab}": np.empty((0, 3)) for lab in ("2", "inf")}
    groups = {"NGD": Curves(steps, empty, diverged=2), "SignGD": Curves(steps, empty, diverged=2)}
    with drawing_formats(FORMATS):
        paths = atlas.figure(groups, ["2", "inf"], {"NGD": "2", "SignGD": "inf"}, tmp_path)
    assert {Path(p).name for p in paths} == {
        f"{stem}.{ext}" for stem in ("atlas", "atlas-curves") for ext in FORMATS
    }


def test_a_long_legend_goes_below_the_figure_not_into_a_panel():
    fig, axes = plotting.subplots(1, 3)
    for k in range(plotting.LEGEND_INSIDE_AT_MOST + 11):
        axes[0, 0].plot([1, 2], [k, k + 1], label=f"a long algorithm name η={k}")
    plotting.legend(fig, axes[0, 0])
    assert axes[0, 0].get_legend() is None and len(fig.legends) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "constrained_layout not applied" before
        fig.canvas.draw()
    assert axes[0, 0].get_position().height > 0.3  # the panel keeps its size
    fig2, axes2 = plotting.subplots(1, 1)
    axes2[0, 0].plot([1, 2], [1, 2], label="one")
    plotting.legend(fig2, axes2[0, 0])
    assert axes2[0, 0].get_legend() is not None and not fig2.legends
