"""A results root shared with a hostile co-user, continued (issue 28, item 4; docs/SECURITY.md):
the files an experiment's pipeline writes into its staging directory (config.json,
summary.json, figures) and the staging directory's removal go through the store's handles, never
through a link swapped in while the experiment runs; a cluster's workers get the experiment
directory's path with no link resolved; a reused summary must have a summary's shape."""

import hashlib
import json
import re
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from attnbias import experiment_registry
from attnbias.cli import main
from attnbias.engine import sweep
from attnbias.experiments import real_runs
from attnbias.figures import save_figure
from attnbias.judging.claims import Claim
from attnbias.store import MANIFEST, ResultsStore
from test_cli import _fake_experiments
from test_results_root_links import elsewhere, one_error_line, snapshot

pytestmark = pytest.mark.usefixtures("one_thread")

# This module is also the experiment "fake" (DESCRIPTION, run): WHILE_RUNNING["act"](out), if
# set, is what the co-user does to the results root while it runs.
DESCRIPTION = "fake: reused (run_keys), and a co-user may act while it runs"
WHILE_RUNNING = {}


def run(config, out):
    if "act" in WHILE_RUNNING:
        WHILE_RUNNING["act"](Path(out))
    return {"claims": [Claim("it ran", True, {"seeds": config["seeds"]})], "run_keys": []}


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """`attnbias reproduce fake --quick --out ROOT` of this module's experiment."""
    _fake_experiments(tmp_path, monkeypatch, ["fake"])
    monkeypatch.setitem(experiment_registry.EXPERIMENTS, "fake", __name__)
    monkeypatch.setattr(sys.modules[__name__], "WHILE_RUNNING", {})
    root = tmp_path / "res"
    return root, ["reproduce", "fake", "--quick", "--out", str(root)]


def swap_for_link(path: Path, place: Path, moved: Path) -> None:
    """What the co-user does: the directory at path moved away, a link to place put there."""
    path.rename(moved)
    path.symlink_to(place)


def draw(out: Path) -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    save_figure(fig, out, "fake", formats=("png", "pdf", "svg"))  # each writer, not the default


# --- the pipeline's own files go through the store's handles -----------------------------------


def test_config_json_is_not_written_behind_a_staging_directory_swapped_for_a_link(
    tmp_path, fake, monkeypatch, capsys
):
    _, args = fake
    place = elsewhere(tmp_path)  # holds a config.json of someone's
    before = snapshot(place)
    staging = ResultsStore.staging

    def staging_then_swap(store):
        stage = staging(store)
        swap_for_link(stage, place, tmp_path / "moved")
        return stage

    monkeypatch.setattr(ResultsStore, "staging", staging_then_swap)
    assert main(args) == 2
    assert "is a symbolic link" in one_error_line(capsys)
    assert snapshot(place) == before


@pytest.mark.parametrize("figure", [False, True], ids=["summary", "figure"])
def test_nothing_is_written_behind_a_staging_directory_swapped_while_the_experiment_runs(
    tmp_path, fake, capsys, figure
):
    root, args = fake
    place = elsewhere(tmp_path)
    before = snapshot(place)

    def act(out):
        swap_for_link(out, place, tmp_path / "moved")
        if figure:
            draw(out)

    WHILE_RUNNING["act"] = act
    assert main(args) == 2
    assert "is a symbolic link" in one_error_line(capsys)
    assert snapshot(place) == before  # no summary.json, no fake.png there
    assert not (root / "fake" / "latest").exists()


def test_an_experiment_directory_swapped_while_it_runs_is_neither_written_nor_cleaned_through(
    tmp_path, fake, capsys
):
    """The co-user's copy of the experiment directory holds a directory at the staging name:
    the summary is not written into it, and the failed run's clean-up does not remove it."""
    root, args = fake
    place = elsewhere(tmp_path)

    def act(out):
        (place / out.name).mkdir()
        (place / out.name / "notes").write_text("the co-user's")
        swap_for_link(out.parent, place, tmp_path / "moved")

    WHILE_RUNNING["act"] = act
    assert main(args) == 2
    assert f"{root / 'fake'} is a symbolic link" in one_error_line(capsys)
    [stage] = [p for p in place.iterdir() if p.is_dir()]
    assert sorted(p.name for p in stage.iterdir()) == ["notes"]


def test_a_figure_is_written_through_the_directory_handle_with_savefig_s_bytes(tmp_path):
    """A link planted at a figure's name is replaced, its target untouched; the bytes are
    those of matplotlib's savefig by path (same figure, metadata and SVG salt)."""
    place = elsewhere(tmp_path)
    before = snapshot(place)
    out = tmp_path / "figures"
    out.mkdir()
    (out / "fake.svg").symlink_to(place / "config.json")
    draw(out)
    assert not (out / "fake.svg").is_symlink() and snapshot(place) == before
    metadata = {"png": {}, "pdf": {"CreationDate": None, "ModDate": None}, "svg": {"Date": None}}
    for ext, meta in metadata.items():
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0])
        with plt.rc_context({"svg.hashsalt": "fake"}):
            fig.savefig(tmp_path / f"reference.{ext}", dpi=130, metadata=meta)
        plt.close(fig)
        assert (out / f"fake.{ext}").read_bytes() == (tmp_path / f"reference.{ext}").read_bytes()


# --- a cluster's workers get the experiment directory, no link resolved -------------------------


class Refused(Exception):
    pass


class FakeCluster:
    """Records the paths a worker would be given, and stops there."""

    def __init__(self):
        self.paths = []

    def check_writable(self, root):
        self.paths.append(Path(root))

    def announce(self, what):
        pass

    def submit(self, fn, *args, name):
        paths = [Path(a) for a in args if isinstance(a, (str, Path))]
        self.paths += [p for p in paths if p.is_absolute()]
        raise Refused


def test_sweep_workers_get_the_experiment_directory_not_a_swapped_runs_link(tmp_path):
    store = ResultsStore(tmp_path / "res" / "exp")
    stage = store.staging()
    swap_for_link(store.runs, elsewhere(tmp_path), tmp_path / "moved")
    cluster = FakeCluster()
    chunk = sweep.Chunk([], [], {}, {}, np.array([]))
    with pytest.raises(Refused):
        sweep.train_on(cluster, [chunk], ResultsStore(stage), "cpu", False, "x")
    assert cluster.paths == [store.directory.absolute()] * 2


@pytest.mark.parametrize("swapped", ["runs", "checkpoints"])
def test_real_data_workers_get_no_link_swapped_in_after_the_store_was_checked(
    tmp_path, monkeypatch, swapped
):
    store = ResultsStore(tmp_path / "res" / "exp")
    stage = store.staging()
    staged = ResultsStore(stage)
    heal = staged.heal

    def heal_then_swap(keys):  # the co-user acts between the check and the submission
        todo = heal(keys)
        swap_for_link(store.directory / swapped, elsewhere(tmp_path), tmp_path / "moved")
        return todo

    monkeypatch.setattr(staged, "heal", heal_then_swap)
    cluster = FakeCluster()
    monkeypatch.setattr(real_runs, "active_cluster", lambda: cluster)
    with pytest.raises(Refused):
        real_runs.run_once(staged, {"a": 1}, lambda checkpoints: None)
    directory = store.directory.absolute()
    assert cluster.paths == [directory, directory]  # the worker's store reaches checkpoints/KEY


# --- a reused summary must have a summary's shape -----------------------------------------------


def forge(root: Path, text: str) -> None:
    """The current publication's summary.json replaced by `text`, its manifest to match."""
    final = (root / "fake" / "latest").resolve()
    (final / "summary.json").write_text(text)
    manifest = json.loads((final / MANIFEST).read_text())
    data = text.encode()
    manifest["files"]["summary.json"] = {
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    (final / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "summary",
    [
        "[1, 2]",
        '{"figures": []}',
        '{"claims": "all"}',
        '{"claims": [{}]}',
        '{"claims": [{"claim": "x", "evidence": {}, "status": "proven"}]}',
        '{"claims": [{"claim": "x", "evidence": {}, "rule": {"threshold": 1}, "status": '
        '"inconclusive"}]}',
        '{"claims": [], "diverged": [{}]}',
        '{"claims": [], "figures": [3]}',
        '{"claims": [], "tables": {"t": [1]}}',
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=lambda s: s[:40],
)
def test_a_reused_summary_of_the_wrong_shape_is_one_line_and_made_again(fake, capsys, summary):
    root, args = fake
    assert main(args) == 0
    assert main(args) == 0  # reused: the forgery below is what a rerun would serve
    assert "reused the published outputs" in capsys.readouterr().out
    forge(root, summary)
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    [line] = [line for line in captured.err.splitlines() if "is not a summary" in line]
    assert str(root / "fake" / "outputs") in line and "the outputs are made again" in line
    assert "[supported] it ran" in captured.out
    assert json.loads((root / "fake" / "summary.json").read_text())["claims"][0]["claim"] == (
        "it ran"
    )


# --- the documented report command replaces the committed report ------------------------------

ROOT = Path(__file__).resolve().parents[1]
REAL_DATA = ("text-md", "text-finetune", "vision")  # not run here: `all` is the fake one


@pytest.mark.parametrize("page", ["README.md", "docs/REAL_DATA.md"])
def test_the_documented_report_command_replaces_a_report_that_differs(
    tmp_path, fake, monkeypatch, page
):
    text = (ROOT / page).read_text(encoding="utf-8")
    [command] = re.findall(r"attnbias reproduce all [^`\n]*--report docs/RESULTS\.md[^`\n]*", text)
    monkeypatch.chdir(tmp_path)  # its paths, relative, land in tmp_path
    monkeypatch.setattr(experiment_registry, "SYNTHETIC", ("fake",))
    args = [a for a in command.split()[1:] if a not in REAL_DATA]
    report = tmp_path / "docs" / "RESULTS.md"
    report.parent.mkdir()
    report.write_text("the committed report, from other results\n")
    assert main(args) == 0
    assert "it ran" in report.read_text()
