"""Figure formats (issue 31, goal 2): a run draws PNG alone (what the reports embed) unless
PDF and SVG are asked for (`--figure-formats png,pdf,svg`, `run_experiment(figure_formats=)`,
`figures.drawing_formats`); a publication whose figures lack an asked format is made again
from its stored runs, one that has them is reused."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from attnbias.cli import main
from attnbias.experiments import load_config, run_experiment
from attnbias.figures import (
    FORMATS,
    checked_formats,
    current_formats,
    drawing_formats,
    lacking_formats,
    save_figure,
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
