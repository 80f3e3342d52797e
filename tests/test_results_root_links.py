"""A results root shared with a hostile co-user (issue 28, item 4; docs/SECURITY.md): the store
follows no link it did not make, checks again where it uses a directory, writes only into
directories it made and replaces only its own links; `claims` prints only summaries that match
their manifest and have a summary's shape; `--report` replaces a file that differs only with
--force."""

import json
import os
from pathlib import Path

import pytest

from attnbias.cli import main
from attnbias.judging.report import write_report
from attnbias.store import MANIFEST, MARKER, ResultsStore, UnsafeStore, tidy, write_manifest
from test_cli import _fake_experiments

pytestmark = pytest.mark.usefixtures("one_thread")


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("attnbias: error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def snapshot(directory: Path) -> dict:
    """Every entry under directory, with a file's bytes and a link's target."""
    found = {}
    for p in sorted(directory.rglob("*")):
        key = str(p.relative_to(directory))
        if p.is_symlink():
            found[key] = ("link", os.readlink(p))
        elif p.is_file():
            found[key] = ("file", p.read_bytes())
        else:
            found[key] = ("directory", None)
    return found


def elsewhere(tmp_path: Path) -> Path:
    """A directory outside the results root, with a file of someone's."""
    place = tmp_path / "elsewhere"
    place.mkdir()
    (place / "config.json").write_text('{"mine": true}')
    return place


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """`attnbias reproduce fake --quick --out ROOT`, an experiment that trains nothing."""
    _fake_experiments(tmp_path, monkeypatch, ["fake"])
    root = tmp_path / "res"
    return root, ["reproduce", "fake", "--quick", "--out", str(root)]


# --- the store follows no link it did not make, and writes only where it made directories -------


def test_a_planted_experiment_directory_link_is_refused_and_nothing_written_behind_it(
    tmp_path, fake, capsys
):
    root, args = fake
    place = elsewhere(tmp_path)
    before = snapshot(place)
    root.mkdir()
    (root / "fake").symlink_to(place)
    assert main(args) == 2
    assert f"{root / 'fake'} is a symbolic link" in one_error_line(capsys)
    assert snapshot(place) == before


@pytest.mark.parametrize(
    "planted",
    [
        {"notes.txt": "my notes"},  # someone's directory, not the store's: nothing written
        {MARKER: "", "config.json": '{"mine": true}'},  # the store's, with a user's own file
        {MARKER: "", "summary.json": "LINK"},  # the store's, with a link it did not make
    ],
)
def test_what_the_store_did_not_make_in_an_experiment_directory_is_never_replaced(
    tmp_path, fake, capsys, planted
):
    root, args = fake
    place = elsewhere(tmp_path)
    directory = root / "fake"
    directory.mkdir(parents=True)
    for name, text in planted.items():
        if text == "LINK":
            (directory / name).symlink_to(place / "config.json")
        else:
            (directory / name).write_text(text)
    before, outside = snapshot(directory), snapshot(place)
    assert main(args) == 2
    line = one_error_line(capsys)
    assert str(directory) in line and (
        "not made by attnbias" in line or "never makes one" in line
    ), line
    assert snapshot(directory) == before and snapshot(place) == outside


def test_an_empty_directory_is_adopted_and_marked(tmp_path, fake):
    root, args = fake
    (root / "fake").mkdir(parents=True)
    assert main(args) == 0
    assert (root / "fake" / MARKER).is_file()
    assert json.loads((root / "fake" / "summary.json").read_text())["claims"]


# --- checked where it is used, not only when the lock is taken ----------------------------------


@pytest.mark.parametrize("swapped", ["runs", "outputs", "stage"])
def test_a_directory_swapped_for_a_link_during_a_run_is_refused_where_it_is_used(tmp_path, swapped):
    place = elsewhere(tmp_path)
    before = snapshot(place)
    store = ResultsStore(tmp_path / "res" / "exp")
    with store.lock():
        stage = store.staging()
        store.save({"a": 0}, tidy([0], {"loss": [1.0]}))
        (stage / "summary.json").write_text("{}")
        (store.root / "outputs").mkdir()
        victim = {"runs": store.runs, "outputs": store.root / "outputs", "stage": stage}
        moved = victim[swapped].rename(tmp_path / "moved")
        victim[swapped].symlink_to(place)
        with pytest.raises(UnsafeStore, match=f"{victim[swapped].name} is a symbolic link"):
            if swapped == "runs":  # an experiment stores its runs through its staging directory
                ResultsStore(stage).save({"a": 1}, tidy([0], {"loss": [1.0]}))
            else:
                store.publish(stage, "0123456789abcdef", runs=[])
        if swapped == "runs":
            for read in (lambda s: s.has("x"), lambda s: s.keys(), lambda s: s.load("x")):
                with pytest.raises(UnsafeStore, match="runs is a symbolic link"):
                    read(ResultsStore(stage))
        victim[swapped].unlink()
        moved.rename(victim[swapped])
    assert snapshot(place) == before


def test_a_staging_directory_replaced_by_another_is_not_published(tmp_path):
    store = ResultsStore(tmp_path / "res" / "exp")
    with store.lock():
        stage = store.staging()
        stage.rename(tmp_path / "moved")
        stage.mkdir()  # a real directory of someone's, at the staging name
        (stage / "summary.json").write_text('{"claims": ["forged"]}')
        with pytest.raises(UnsafeStore, match="was replaced while the experiment ran"):
            store.publish(stage, "0123456789abcdef", runs=[])
    assert not (store.root / "latest").exists()


# --- claims prints only what matches the manifest, in a summary's shape -------------------------


def published(root: Path, name: str, summary) -> Path:
    """A publication of `summary` made by the store for experiment `name` under root."""
    store = ResultsStore(root / name)
    stage = store.staging()
    (stage / "summary.json").write_text(json.dumps(summary))
    return store.publish(stage, "0123456789abcdef", runs=[])


SUMMARY = {"claims": [{"id": "made/here", "claim": "made", "evidence": {}, "status": "supported"}]}


def test_claims_refuses_a_summary_edited_after_it_was_published(tmp_path, capsys):
    root = tmp_path / "res"
    final = published(root, "md-joint", SUMMARY)
    assert main(["claims", "--out", str(root)]) == 0
    assert "made/here" in capsys.readouterr().out
    text = (final / "summary.json").read_text()
    (final / "summary.json").write_text(text.replace("made/here", "made/evil"))  # same size
    assert main(["claims", "--out", str(root)]) == 2
    line = one_error_line(capsys)
    assert str(root / "md-joint" / "summary.json") in line and "sha256" in line
    assert "attnbias reproduce md-joint --out" in line


def test_claims_reads_no_summary_json_that_links_out_of_the_root(tmp_path, capsys):
    root = tmp_path / "res"
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"claims": [{**SUMMARY["claims"][0], "id": "secret/x"}]}))
    published(root, "md-joint", SUMMARY)
    link = root / "md-joint" / "summary.json"
    link.unlink()
    link.symlink_to(secret)
    assert main(["claims", "--out", str(root)]) == 2
    assert f"{link} points to {secret}" in one_error_line(capsys)
    assert "secret/x" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "summary",
    [[1, 2], {"claims": "all"}, {"claims": [1]}, {"claims": [{"id": 3}]}, {"claims": [{}]}],
)
def test_claims_of_a_summary_of_the_wrong_shape_is_one_line(tmp_path, capsys, summary):
    root = tmp_path / "res"
    published(root, "md-joint", summary)  # forged with its manifest: it matches
    assert (root / "md-joint" / "summary.json").read_text() == json.dumps(summary)
    assert main(["claims", "--out", str(root)]) == 2
    assert "is not a summary attnbias writes" in one_error_line(capsys)


@pytest.mark.parametrize("manifest", ["[]", '{"files": []}', '{"files": {}, "runs": 5}'])
def test_manifests_of_the_wrong_shape_are_one_line_or_made_again(tmp_path, fake, capsys, manifest):
    root, args = fake
    assert main(args) == 0
    final = (root / "fake" / "latest").resolve()
    (final / MANIFEST).write_text(manifest)
    capsys.readouterr()
    assert main(["claims", "--out", str(root)]) == 2
    assert "summary.json is not the published summary" in one_error_line(capsys)
    assert main(args) == 0  # reproduce makes the outputs again
    assert "Traceback" not in capsys.readouterr().err
    assert main(["claims", "--out", str(root)]) == 0


def test_write_manifest_at_a_planted_link_replaces_the_link_not_its_target(tmp_path):
    place = elsewhere(tmp_path)
    before = snapshot(place)
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "f").write_text("x")
    (directory / MANIFEST).symlink_to(place / "config.json")
    write_manifest(directory)
    assert not (directory / MANIFEST).is_symlink() and snapshot(place) == before


# --- --report replaces a file that differs only with --force -----------------------------------


def test_report_replaces_a_file_or_figure_that_differs_only_with_force(tmp_path, fake, capsys):
    _, args = fake
    report = tmp_path / "docs" / "RESULTS.md"
    report.parent.mkdir()
    report.write_text("my own notes\n")
    assert main([*args, "--report", str(report)]) == 2
    line = one_error_line(capsys)
    assert f"--report {report}" in line and "--force replaces it" in line
    assert report.read_text() == "my own notes\n"
    assert main([*args, "--report", str(report), "--force"]) == 0
    written = report.read_text()
    assert "it ran" in written
    assert main([*args, "--report", str(report)]) == 0  # the same report: nothing to force
    assert report.read_text() == written
    assert main([*args, "--force"]) == 2
    assert "--force: only with --report" in one_error_line(capsys)


def test_report_figures_that_differ_are_replaced_only_with_force(tmp_path):
    root = tmp_path / "res" / "exp"
    store = ResultsStore(root)
    stage = store.staging()
    (stage / "exp.png").write_bytes(b"\x89PNG figure")
    store.publish(stage, "0123456789abcdef", runs=[])
    report = tmp_path / "docs" / "R.md"
    (report.parent / "figures").mkdir(parents=True)
    mine = report.parent / "figures" / "exp.png"
    mine.write_bytes(b"my own figure")
    summary = {"claims": [], "figures": ["outputs/0123456789abcdef/exp.png"]}

    def write(force):
        return write_report({"exp": summary}, {"exp": {}}, report, "attnbias", {"exp": root}, force)

    with pytest.raises(ValueError, match=r"figures/exp\.png exists and differs"):
        write(False)
    assert mine.read_bytes() == b"my own figure" and not report.exists()
    write(True)
    assert mine.read_bytes() == b"\x89PNG figure" and report.exists()


def test_claims_of_a_summary_nested_too_deep_to_read_is_one_line(tmp_path, capsys):
    root = tmp_path / "res"
    store = ResultsStore(root / "md-joint")
    stage = store.staging()
    deep = 100_000  # json's parser recurses once a level: past Python's limit
    (stage / "summary.json").write_text('{"claims": [], "x": ' + "[" * deep + "]" * deep + "}")
    store.publish(stage, "0123456789abcdef", runs=[])  # forged with its manifest: it matches
    assert main(["claims", "--out", str(root)]) == 2
    assert "its JSON nests 100001 levels deep (at most 64 are read)" in one_error_line(capsys)
