"""Figure formats (issue 31, goal 2): a run draws PNG alone (what the reports embed) unless
PDF and SVG are asked for (`--figure-formats png,pdf,svg`, `run_experiment(figure_formats=)`,
`figures.drawing_formats`); a publication whose figures lack an asked format is made again
from its stored runs, one that has them is reused."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from attnbias.cli import main
from attnbias.experiments import load_config, run_experiment
from attnbias.figures import (
    FORMATS,
    checked_formats,
    current_formats,
    drawing_formats,
    lacking_formats,
    save_figure,
    thin_log_minor_ticks,
)
from test_experiments import TINY

pytestmark = pytest.mark.usefixtures("one_thread")


def suffixes(paths) -> list[str]:
    return [Path(p).suffix for p in paths]


def test_save_figure_draws_png_alone_unless_asked(tmp_path):
    assert suffixes(save_figure(plt.figure(), tmp_path, "a")) == [".png"]
    with drawing_formats("png,pdf,svg") as chosen:
        assert chosen == current_formats() == FORMATS
        assert suffixes(save_figure(plt.figure(), tmp_path, "b")) == [".png", ".pdf", ".svg"]
    assert current_formats() == ("png",)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.pdf", "b.png", "b.svg"]


def laid_out_figure():
    """A constrained-layout figure with what makes its layout work: log axes, titles, a legend."""
    fig, axes = plt.subplots(2, 2, layout="constrained", sharey="row")
    for i, ax in enumerate(axes.flat):
        ax.loglog([1, 10, 100], [1, 0.1 ** (i + 1), 1e-3], label=f"curve {i}")
        ax.set_title(f"panel {i}")
        ax.legend()
    fig.suptitle("a figure\nof two lines")
    return fig


def test_a_laid_out_figure_is_drawn_once(tmp_path, monkeypatch):
    # savefig draws a figure with a layout engine twice (the layout's pass, then the file's):
    # save_figure lays it out itself and leaves savefig no engine: the file's draw is the one
    draws = []
    draw = Figure.draw
    counted = lambda fig, renderer: (draws.append(1), draw(fig, renderer))  # noqa: E731
    monkeypatch.setattr(Figure, "draw", counted)
    save_figure(laid_out_figure(), tmp_path, "a")
    assert len(draws) == 1


def test_the_png_is_the_same_whatever_else_is_drawn(tmp_path):
    # the layout is made at the PNG's dpi, as savefig's own: the same bytes as savefig's PNG, and
    # the same whether or not vector formats are drawn beside it
    fig = laid_out_figure()
    thin_log_minor_ticks(fig)  # as save_figure does
    fig.savefig(tmp_path / "savefig.png", dpi=130, metadata={})
    plt.close(fig)
    (alone,) = save_figure(laid_out_figure(), tmp_path, "alone")
    beside = save_figure(laid_out_figure(), tmp_path, "beside", formats=("png", "svg"))[0]
    png = (tmp_path / "savefig.png").read_bytes()
    assert Path(alone).read_bytes() == png
    assert Path(beside).read_bytes() == png


def test_formats_are_checked_naming_the_argument():
    assert checked_formats(" svg, png,svg ") == ("svg", "png")
    with pytest.raises(ValueError, match="--figure-formats must be some of png, pdf, svg"):
        checked_formats("png,jpg", "--figure-formats")
    with pytest.raises(ValueError, match="formats must be some of"):
        checked_formats("")
    with pytest.raises(TypeError, match="formats must be format names"):
        checked_formats([1])
    with pytest.raises(ValueError, match="formats must be some of"), drawing_formats(["eps"]):
        pass  # pragma: no cover


def test_lacking_formats_looks_at_each_figure():
    drawn = ["o/a.png", "o/a.pdf", "o/b.png"]
    assert not lacking_formats(drawn, ("png",))
    assert lacking_formats(drawn, ("png", "pdf"))  # b has no PDF
    assert not lacking_formats([], FORMATS)  # no figures: nothing lacks


@pytest.mark.slow
def test_a_publication_is_redrawn_only_for_a_format_it_lacks(tmp_path):
    config = load_config("md-local", quick=True, overrides=TINY["md-local"])
    first = run_experiment(config, tmp_path)
    assert {Path(f).suffix for f in first["figures"]} == {".png"}
    assert not (tmp_path / "md-local.pdf").exists()
    again = run_experiment(config, tmp_path, figure_formats=("png", "pdf"))
    assert not again.get("reused_outputs") and again["trained"] == 0  # drawn from stored runs
    assert {Path(f).suffix for f in again["figures"]} == {".png", ".pdf"}
    assert (tmp_path / "md-local.pdf").stat().st_size > 0
    assert run_experiment(config, tmp_path)["reused_outputs"]  # PNG: held already


def test_cli_refuses_an_unknown_format_in_one_line(tmp_path, capsys):
    out = str(tmp_path / "out")
    assert main(["reproduce", "md-local", "--quick", "--out", out, "--figure-formats", "jpg"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--figure-formats must be some of png, pdf, svg" in err
    assert not (tmp_path / "out").exists()  # refused before anything ran
