"""Untrusted files (docs/SECURITY.md): the findings of issue 22 replayed. Each is refused with one
clear line (exit code 2 on the command line) and leaves every file outside the results root
untouched; no code runs from data, nothing is followed out of the results directory, only
the store's own leftovers are deleted, sizes are checked before anything is loaded."""

import hashlib
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbias.cli import main
from attnbias.data import gaussian_unit
from attnbias.judging.report import write_report
from attnbias.npz import ArrayTooLarge, load_npz
from attnbias.real.train import UnsafeCheckpoint, save_checkpoint
from attnbias.store import (
    MANIFEST,
    MARKER,
    TEMPORARY,
    DamagedRun,
    ResultsStore,
    UnsafeStore,
    tidy,
    write_manifest,
)
from attnbias.svm import att_svm, selected_tokens, solver_memory
from tiny_model import train_tiny

pytestmark = pytest.mark.usefixtures("one_thread")

DEAD_PID = 999_999_999  # above any PID the kernel hands out (pid_max ≤ 2²²)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("attnbias: error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


class Payload:
    """Unpickling it creates the file `marker`: code run from data."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


# --- 1. no unpickling -------------------------------------------------------------------------


def test_a_planted_pickle_checkpoint_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    checkpoints = tmp_path / "out" / "checkpoints" / "0123456789abcdef"
    checkpoints.mkdir(parents=True)
    torch.save({"history": Payload(marker)}, checkpoints / "last.pt")
    with pytest.raises(UnsafeCheckpoint, match="not loaded") as refused:
        train_tiny(checkpoints, steps=4)
    assert "\n" not in str(refused.value) and "remove it" in str(refused.value)
    assert not marker.exists()


def test_a_checkpoint_written_by_train_resumes_under_weights_only(tmp_path):
    history = train_tiny(tmp_path, steps=2)
    state = torch.load(tmp_path / "last.pt", weights_only=True)  # plain values only
    assert state["step"] == 2 and state["history"]["train_loss"] == history.train_loss
    resumed = train_tiny(tmp_path, steps=4)
    assert resumed.steps == [1, 2, 3, 4] and resumed.train_loss[:2] == history.train_loss


def test_checkpoints_are_never_read_or_written_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "last.pt").write_bytes(b"not yours")
    linked = tmp_path / "checkpoints" / "key"
    linked.parent.mkdir()
    linked.symlink_to(victim)
    with pytest.raises(UnsafeCheckpoint, match="symbolic link"):
        train_tiny(linked, steps=4)
    own = tmp_path / "own"
    own.mkdir()
    (own / "last.pt").symlink_to(victim / "last.pt")
    with pytest.raises(UnsafeCheckpoint, match="symbolic link is never followed"):
        train_tiny(own, steps=4)
    assert (victim / "last.pt").read_bytes() == b"not yours" and os.listdir(victim) == ["last.pt"]
    # a link planted where an older version wrote its temporary file is not written through
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    (fixed / ".last.pt.partial").symlink_to(victim / "last.pt")
    save_checkpoint(fixed / "last.pt", {"step": 1})
    assert (victim / "last.pt").read_bytes() == b"not yours"


def object_npz(path: Path, marker: Path, **plain) -> None:
    np.savez(path, X=np.array([Payload(marker)], dtype=object), **plain)


def test_an_npz_with_an_object_array_is_refused_unread(tmp_path, capsys):
    marker = tmp_path / "pwned"
    object_npz(tmp_path / "evil.npz", marker, z=np.zeros((1, 2)))
    assert main(["svm", str(tmp_path / "evil.npz")]) == 2
    assert "holds Python objects" in one_error_line(capsys)
    # a stored run whose arrays.npz was replaced (its manifest too): damaged, not unpickled
    store = ResultsStore(tmp_path / "out")
    key = store.save({"a": 1}, tidy([0], {"loss": [1.0]}), {"W": np.eye(2)})
    run = tmp_path / "out" / "runs" / key
    object_npz(run / "arrays.npz", marker)
    write_manifest(run, key=key, status="finished")
    with pytest.raises(DamagedRun, match="holds Python objects"):
        store.load(key)
    assert not marker.exists()


def test_no_source_file_unpickles():
    src = Path(__file__).resolve().parents[1] / "src" / "attnbias"
    for path in src.rglob("*.py"):
        text = path.read_text()
        assert "weights_only=False" not in text, path
        assert "allow_pickle=True" not in text, path
        assert "import pickle\n" not in text or "pickle.load" not in text, path


# --- 2. the store touches only its own files ---------------------------------------------------


def quick_md_joint(out: Path, *extra, quiet: bool = True) -> list[str]:
    return [
        "reproduce",
        "md-joint",
        "--quick",
        "--seeds",
        "1",
        *(["--quiet"] if quiet else []),
        "--out",
        str(out),
        *extra,
    ]


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path, capsys):
    victim = tmp_path / "bashrc"
    victim.write_text("alias ls=ls\n")
    root = tmp_path / "res" / "md-joint"
    root.mkdir(parents=True)
    (root / ".lock").symlink_to(victim)
    with pytest.raises(UnsafeStore, match="symbolic link"):
        with ResultsStore(root).lock():
            pass
    assert main(quick_md_joint(tmp_path / "res")) == 2
    assert ".lock is a symbolic link" in one_error_line(capsys)
    assert victim.read_text() == "alias ls=ls\n"
    (root / ".lock").unlink()
    os.link(victim, root / ".lock")  # a hard link to someone's file: not the store's own
    with pytest.raises(UnsafeStore, match="not a regular file of its own"):
        with ResultsStore(root).lock():
            pass
    assert victim.read_text() == "alias ls=ls\n"


def home_with_secrets(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for hidden in (".ssh", ".config", ".git"):
        (home / hidden).mkdir(parents=True)
        (home / hidden / "key").write_text("secret")
    return home


def snapshot(directory: Path) -> dict:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize("linked", ["runs", "outputs", "checkpoints"])
def test_a_symlinked_store_directory_is_refused_and_nothing_behind_it_deleted(
    tmp_path, capsys, linked
):
    home = home_with_secrets(tmp_path)
    before = snapshot(home)
    root = tmp_path / "res" / "md-joint"
    root.mkdir(parents=True)
    (root / linked).symlink_to(home)
    with pytest.raises(UnsafeStore, match=f"{linked} is a symbolic link"):
        with ResultsStore(root).lock():
            pass
    assert main(quick_md_joint(tmp_path / "res")) == 2
    assert f"{linked} is a symbolic link" in one_error_line(capsys)
    assert snapshot(home) == before


def test_store_directories_that_are_files_and_a_latest_out_of_outputs_are_refused(tmp_path):
    root = tmp_path / "res"
    root.mkdir()
    (root / "runs").write_text("a file")
    with pytest.raises(UnsafeStore, match="runs is not a directory"):
        with ResultsStore(root).lock():
            pass
    (root / "runs").unlink()
    home = home_with_secrets(tmp_path)
    (root / "latest").symlink_to(home)
    with pytest.raises(UnsafeStore, match="outside"):
        ResultsStore(root).published()
    (root / "latest").unlink()
    (root / "outputs").mkdir()
    (root / "outputs" / "0123456789abcdef").symlink_to(home)
    (root / "latest").symlink_to("outputs/0123456789abcdef")
    with pytest.raises(UnsafeStore, match="symbolic link"):
        ResultsStore(root).published()


def test_cleanup_unlinks_a_link_at_a_leftover_name_and_never_follows_it(tmp_path):
    home = home_with_secrets(tmp_path)
    before = snapshot(home)
    store = ResultsStore(tmp_path / "res")
    key = store.save({"a": 1}, tidy([0], {"loss": [1.0]}))
    planted = [
        store.runs / f".{key}-{DEAD_PID}-abcdefgh",
        store.root / f".staging-{DEAD_PID}-abcdefgh",
        store.root / f".summary.json.{DEAD_PID}.tmp",
    ]
    for link in planted:
        link.symlink_to(home)
    with store.lock():
        pass
    assert not [p for p in planted if os.path.lexists(p)] and snapshot(home) == before


def test_write_json_never_writes_through_a_planted_temporary(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("mine")
    store = ResultsStore(tmp_path / "res")
    store.root.mkdir()
    (store.root / f".summary.json.{os.getpid()}.tmp").symlink_to(victim)
    store.write_json("summary.json", {"a": 1})
    assert victim.read_text() == "mine" and json.loads((store.root / "summary.json").read_text())


# --- --report and --from copy only verified regular files of the results directory --------------


def publication(root: Path, files: dict[str, bytes]) -> Path:
    """A publication of `files` made by the store, published as current."""
    store = ResultsStore(root)
    stage = store.staging()
    for name, data in files.items():
        (stage / name).write_bytes(data)
    return store.publish(stage, "0123456789abcdef", runs=[])


def test_report_refuses_figures_that_are_links_edited_or_outside(tmp_path):
    secret = tmp_path / "id_rsa.png"
    secret.write_bytes(b"-----BEGIN KEY-----")
    root = tmp_path / "res" / "exp"
    final = publication(root, {"exp.png": b"\x89PNG figure", "summary.json": b"{}"})
    report = tmp_path / "docs" / "R.md"

    def report_with(figure) -> None:
        summary = {"claims": [], "figures": [str(figure)]}
        write_report({"exp": summary}, {"exp": {}}, report, "attnbias", {"exp": root})

    report_with(final / "exp.png")  # the publication's own figure is copied
    assert (report.parent / "figures" / "exp.png").read_bytes() == b"\x89PNG figure"
    (final / "evil.png").symlink_to(secret)
    (final / "exp.png").write_bytes(b"\x89PNG edited")  # same size, other bytes
    outside = tmp_path / "res" / "other.png"
    outside.write_bytes(b"other")
    for figure, reason in [
        (final / "evil.png", "symbolic link"),
        (final / "exp.png", "does not match the sha256"),
        (root / "outputs" / "0123456789abcdef" / ".." / ".." / ".." / "other.png", "not a file"),
        (outside, "not a file"),
        (tmp_path / "id_rsa.png", "not a file"),  # absolute, outside
    ]:
        with pytest.raises(UnsafeStore, match=reason):
            report_with(figure)
    copied = [p.read_bytes() for p in (report.parent / "figures").iterdir()]
    assert copied == [b"\x89PNG figure"]


@pytest.mark.slow
def test_report_of_an_edited_summary_naming_a_link_to_a_secret_is_refused(tmp_path, capsys):
    """The finding as written: same-length edit of summary.json, figure a link to a secret.
    The edited summary fails its checksum, so it is not served: the outputs are rebuilt from
    the stored runs and the secret is never copied."""
    secret = tmp_path / "secret"
    secret.write_bytes(b"TOKEN=hunter2")
    res, report = tmp_path / "res", tmp_path / "docs" / "RESULTS.md"
    assert main(quick_md_joint(res)) == 0
    published = (res / "md-joint" / "latest").resolve()
    text = (published / "summary.json").read_text()
    assert "md-joint.png" in text
    (published / "summary.json").write_text(text.replace("md-joint.png", "secretxx.png"))
    (published / "secretxx.png").symlink_to(secret)
    capsys.readouterr()
    assert main(quick_md_joint(res, "--report", str(report))) == 0
    assert "secretxx" not in report.read_text()
    figures = report.parent / "figures"
    assert not figures.exists() or all(
        p.read_bytes() != secret.read_bytes() for p in figures.iterdir()
    )


def test_from_copies_only_manifest_files_that_match_and_no_links(tmp_path, caplog):
    caplog.set_level("INFO", logger="attnbias")
    secret = tmp_path / "secret"
    secret.write_bytes(b"TOKEN=hunter2")
    source = ResultsStore(tmp_path / "old")
    good = source.save({"a": 1}, tidy([0, 1], {"loss": [1.0, 0.5]}), {"W": np.eye(2)})
    linked = source.save({"a": 2}, tidy([0], {"loss": [1.0]}))
    edited = source.save({"a": 3}, tidy([0], {"loss": [1.0]}))
    (source.runs / good / "extra").symlink_to(secret)  # not in its manifest: not copied
    info = source.runs / linked / "info.json"
    info.unlink()
    info.symlink_to(secret)  # in the manifest, but a link
    target = ResultsStore(tmp_path / "new")
    assert target.copy_runs_from(source) == 2
    assert target.keys() == sorted([good, edited])
    assert sorted(os.listdir(target.runs / good)) == sorted(
        ["arrays.npz", "config.json", "info.json", "metrics.parquet", MANIFEST]
    )
    assert "reused 2 runs from" in caplog.text
    caplog.clear()
    for key in target.keys():
        for p in (target.runs / key).iterdir():
            assert not p.is_symlink() and p.read_bytes() != secret.read_bytes()
    # a file edited after the check, as it is copied: the run is not reused
    target2 = ResultsStore(tmp_path / "new2")
    original = (source.runs / edited / "info.json").read_bytes()
    real_check = source.problem
    source.problem = lambda key: None  # as if it changed between the check and the copy
    (source.runs / edited / "info.json").write_bytes(original.replace(b"{", b"[", 1))
    target2.copy_runs_from(source)
    source.problem = real_check
    err = caplog.text
    assert target2.keys() == [good] and "does not match its manifest" in err
    assert f"run {linked}" in err and "reused 1 runs from" in err


@pytest.mark.slow
def test_from_a_missing_directory_is_refused_and_an_experiment_dir_is_said(tmp_path, capsys):
    new = tmp_path / "new"
    assert main(quick_md_joint(new, "--from", str(tmp_path / "missing"))) == 2
    assert "--from" in one_error_line(capsys) and not new.exists()
    old = tmp_path / "old"
    assert main(quick_md_joint(old)) == 0
    capsys.readouterr()
    # the experiment directory (as the read-only hint names it): said, and its runs reused
    # (the count is progress information: shown unless --quiet)
    assert main(quick_md_joint(new, "--from", str(old / "md-joint"), quiet=False)) == 0
    out, err = capsys.readouterr()
    assert f"--from {old / 'md-joint'}: an experiment's directory" in out
    runs = len(ResultsStore(old / "md-joint").keys())
    assert f"reused {runs} runs from {old / 'md-joint'}" in err
    summary = json.loads((new / "md-joint" / "summary.json").read_text())
    assert summary["trained"] == 0 and summary["reused"] == summary["runs"] == runs
    assert main(quick_md_joint(tmp_path / "new2", "--from", str(tmp_path))) == 2
    assert "holds no runs of md-joint" in one_error_line(capsys)


# --- 3. bounded loading -------------------------------------------------------------------------


def npz_bomb(path: Path, shape, data_bytes: int | None = None) -> None:
    """An .npz whose X header says `shape` (float64): with its data deflated (zeros, about
    1000:1), or with data_bytes of it only."""
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    nbytes = int(np.prod(shape)) * 8 if data_bytes is None else data_bytes
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("X.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, header)
            chunk = bytes(1 << 22)
            for start in range(0, nbytes, len(chunk)):
                f.write(chunk[: nbytes - start])
        with archive.open("z.npy", "w") as f:
            np.lib.format.write_array(f, np.zeros((shape[0], shape[2])))


def test_a_decompression_bomb_is_refused_from_its_header(tmp_path, capsys):
    bomb = tmp_path / "bomb.npz"
    npz_bomb(bomb, (200, 250, 500))  # 200 MB of zeros in a fraction of an MB
    assert bomb.stat().st_size < 10**6
    assert main(["svm", str(bomb), "--max-array-mb", "100"]) == 2
    line = one_error_line(capsys)
    assert "array 'X' of shape (200, 250, 500)" in line and "200.0 MB" in line
    assert "--max-array-mb" in line
    # the 3 GB at the default limit: refused from the header, before any data is read
    npz_bomb(bomb, (400, 1000, 1000), data_bytes=0)
    assert main(["svm", str(bomb)]) == 2
    assert "3,200.0 MB, more than the limit of 1,024.0 MB" in one_error_line(capsys)
    with pytest.raises(ArrayTooLarge, match="'X'"):
        load_npz(bomb, 10**9, "max_bytes")


def test_npz_arrays_load_as_numpy_saves_them(tmp_path):
    arrays = {
        "a": np.arange(12.0).reshape(3, 4),
        "f": np.asfortranarray(np.arange(6).reshape(2, 3)),
        "e": np.zeros((0, 5)),
        "s": np.array(2.5),
        "b": np.array([True, False]),
        "c": np.array([1 + 2j], dtype=np.complex64),
    }
    np.savez_compressed(tmp_path / "a.npz", **arrays)
    loaded = load_npz(tmp_path / "a.npz", 10**6, "x")
    assert loaded.keys() == arrays.keys()
    for k, v in arrays.items():
        assert loaded[k].dtype == v.dtype and np.array_equal(loaded[k], v)
    truncated = tmp_path / "t.npz"
    truncated.write_bytes((tmp_path / "a.npz").read_bytes()[:200])
    with pytest.raises(ValueError, match=r"not a readable \.npz"):
        load_npz(truncated, 10**6, "x")


# --- the SVM states its memory up front and refuses beyond the limit ----------------------------


def test_a_large_svm_is_refused_before_solving_naming_size_and_flag(tmp_path, capsys):
    P = gaussian_unit(2000, 6, 6, seed=1)  # the nuclear SVM at n = 2000
    X, z = np.asarray(P.X), np.asarray(P.z)
    with pytest.raises(ValueError, match=r"needs about 4\.\d+ GB .* max_memory_gb="):
        att_svm(X, z, 0, "nuc", max_memory_gb=1)
    np.savez(tmp_path / "p.npz", X=X, z=z, alpha=np.zeros(2000, dtype=int))
    assert main(["svm", str(tmp_path / "p.npz"), "--norm", "nuc", "--max-memory-gb", "1"]) == 2
    assert "--max-memory-gb" in one_error_line(capsys)
    for bad, error in [("8", TypeError), (True, TypeError), (0, ValueError), (np.nan, ValueError)]:
        with pytest.raises(error, match="max_memory_gb"):
            att_svm(X[:3], z[:3], 0, max_memory_gb=bad)


def test_the_svm_command_states_its_memory_estimate(tmp_path, capsys):
    P = gaussian_unit(4, 5, 6, seed=1)
    W = np.random.default_rng(0).standard_normal((6, 6))
    np.savez(tmp_path / "p.npz", X=P.X, z=P.z, W=W)
    assert main(["svm", str(tmp_path / "p.npz"), "--norm", "nuc"]) == 0
    assert "memory     about " in capsys.readouterr().out
    estimate = solver_memory(16, 36, "nuc", queries=4)
    assert estimate > 0 and solver_memory(16, 36, 2.0) < estimate
    assert att_svm(P.X, P.z, selected_tokens(W, P.X, P.z), "nuc", max_memory_gb=None).W is not None


# --- a config whose runs all diverge still writes its summary, listing them --------------------

ALL_DIVERGE = """
experiment = "ngd-fixed"
seeds = 2
steps = 60
loss = "exponential"
algorithms = [
    {name = "GD", optimizer = "md", p = 1.1, lr = 1e300},
    {name = "NGD", optimizer = "md", p = 1.2, lr = 1e300},
    {name = "Polyak", optimizer = "md", p = 1.3, lr = 1e300},
]
"""


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # means of the empty (all-diverged) groups
def test_a_config_whose_runs_all_diverge_writes_its_summary_listing_them(tmp_path, capsys):
    config = tmp_path / "diverging.toml"
    config.write_text(ALL_DIVERGE)
    out = tmp_path / "ngd-fixed"
    assert main(["run", str(config), "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    # every run diverged: the 6 evaluation runs and the step-tuning runs on the selection seeds
    assert len(summary["diverged"]) == summary["runs"] > 6
    assert f"{summary['runs']} run(s) diverged and are left out of the claims" in printed
    assert (out / "ngd-fixed.png").stat().st_size > 0


def test_plots_skip_non_finite_values_and_draw_nothing_for_an_empty_series(tmp_path):
    from attnbias.curves import Curves
    from attnbias.experiments import plotting
    from attnbias.figures import save_figure

    steps = np.array([0, 1, 10, 100])
    empty = Curves(steps, {"loss": np.empty((0, 4))}, diverged=3)
    partly = Curves(steps, {"loss": np.array([[1.0, np.inf, 0.1, np.nan], [1.0, 0.5, 0.2, 0.0]])})
    fig, axes = plotting.subplots(1, 2)
    line = plotting.band(axes[0, 0], empty, "loss", label="GD", log=(True, True))
    assert len(line.get_xdata()) == 0 and "nothing finite" in line.get_label()
    plotting.band(axes[0, 0], partly, "loss", label="NGD", log=(True, True))
    plotting.limit_decades(axes[0, 0])
    plotting.band(axes[0, 1], empty, "loss", log=(True, True))
    plotting.limit_decades(axes[0, 1])
    assert plotting.runs_per_curve({"GD": empty}) == 0
    assert "every run diverged" in plotting.band_note(0)
    assert all(Path(f).stat().st_size > 0 for f in save_figure(fig, tmp_path, "f"))


# --- property-based: store paths ----------------------------------------------------------------

NAME_CHARACTERS = "abcdef0123456789-._xyz"
names = st.text(NAME_CHARACTERS, min_size=1, max_size=40).filter(lambda s: s not in (".", ".."))


@st.composite
def own_names(draw):
    """The store's own temporary names, with a live or a dead PID."""
    key = draw(st.text("0123456789abcdef", min_size=16, max_size=16))
    pid = draw(st.sampled_from([os.getpid(), DEAD_PID]))
    random8 = draw(st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=8, max_size=8))
    return draw(
        st.sampled_from(
            [
                ("runs", f".{key}-{pid}-{random8}", "directory"),
                ("runs", f".{key}-{pid}-discarded", "directory"),
                ("outputs", f".{key}-{pid}-discarded", "directory"),
                ("", f".staging-{pid}-{random8}", "directory"),
                ("", f".summary.json.{pid}.tmp", "file"),
                ("", f".latest.{pid}.link", "file"),
            ]
        )
    )


def ours(parent: str, name: str) -> tuple[bool, str | None]:
    """(a name of the store's own, the kind it makes there) from the store's patterns."""
    for directory, pattern, kind in TEMPORARY:
        match = pattern.fullmatch(name)
        if directory == parent and match:
            return int(match["pid"]) != os.getpid(), kind
    return False, None


entries = st.lists(
    st.tuples(
        st.one_of(
            st.tuples(st.sampled_from(["runs", "outputs", ""]), names, st.just(None)), own_names()
        ),
        st.sampled_from(["directory", "file", "link"]),
    ),
    max_size=8,
)


@settings(max_examples=50, deadline=None)
@given(entries)
def test_cleanup_removes_exactly_dead_writers_own_names_and_follows_no_link(planted):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        home = home_with_secrets(tmp)
        before = snapshot(home)
        store = ResultsStore(tmp / "res")
        for sub in ("runs", "outputs"):
            (store.root / sub).mkdir(parents=True)
        (store.root / MARKER).touch()  # the store's own directory, whatever is put in it
        made = {}
        for (parent, name, _), kind in planted:
            path = store.root / parent / name
            if os.path.lexists(path) or name in ("runs", "outputs", ".lock", MARKER):
                continue
            if kind == "directory":
                path.mkdir()
                (path / "file").write_text("x")
            elif kind == "file":
                path.write_text("x")
            else:
                path.symlink_to(home)
            made[path] = (parent, name, kind)
        with store.lock():
            pass
        for path, (parent, name, kind) in made.items():
            dead_ours, makes = ours(parent, name)
            removed = dead_ours and (kind == "link" or kind == makes)
            assert os.path.lexists(path) != removed, (parent, name, kind)
        assert snapshot(home) == before


path_parts = st.lists(
    st.one_of(names, st.sampled_from(["..", "outputs", "0123456789abcdef", "f.png", "/"])),
    min_size=1,
    max_size=5,
)


@settings(max_examples=50, deadline=None)
@given(path_parts, st.booleans())
def test_published_file_returns_only_a_verified_file_of_a_publication(parts, absolute):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        secret = tmp / "f.png"
        secret.write_bytes(b"secret")
        root = tmp / "res"
        final = publication(root, {"f.png": b"figure"})
        (final / "l.png").symlink_to(secret)
        path = Path(*parts)
        path = root / path if absolute else path
        try:
            data = ResultsStore(root).published_file(path)
        except UnsafeStore:
            return
        assert data == b"figure"
        assert hashlib.sha256(data).hexdigest() == hashlib.sha256(b"figure").hexdigest()


# --- 5. what is served as current, and what is imported ----------------------------------------


PUBLISHING = """
from attnbias.judging.claims import Claim
from attnbias.config import LooseConfig


class Publishing:
    name = "publishing"
    description = "publishes a summary from no runs (so that a rerun reuses it)"
    Config = LooseConfig

    def run(self, config, out):
        return {"claims": [Claim("made", True, {"value": 1234})], "run_keys": []}
"""


def test_an_edited_summary_of_the_right_size_is_never_served_as_current(
    tmp_path, monkeypatch, caplog
):
    from attnbias.experiments.base import run_experiment

    (tmp_path / "publishing_experiment.py").write_text(PUBLISHING)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {"experiment": "publishing_experiment:Publishing"}
    out = tmp_path / "out"
    first = run_experiment(config, out)
    assert run_experiment(config, out)["reused_outputs"]  # unchanged: served
    summary = out / "summary.json"  # a link into the publication: the file itself is edited
    edited = summary.read_text().replace('"value": 1234', '"value": 9999')
    assert len(edited) == len(summary.read_text())  # only the sha256 can tell
    summary.resolve().write_text(edited)
    with caplog.at_level("WARNING", "attnbias"):
        again = run_experiment(config, out)
    assert "reused_outputs" not in again and again["claims"] == first["claims"]
    assert "does not match the sha256" in caplog.text
    assert json.loads(summary.read_text())["claims"][0]["evidence"]["value"] == 1234


def test_a_config_file_imports_a_module_only_with_allow_import(tmp_path, monkeypatch, capsys):
    """A TOML naming module:attribute would run that module's code: refused unless the user
    says --allow-import; a registered experiment, or module:attribute typed on the command line,
    needs no flag."""
    marker = tmp_path / "imported"
    (tmp_path / "planted.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).touch()\n" + PUBLISHING
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "planted", raising=False)
    config = tmp_path / "found.toml"
    config.write_text('experiment = "planted:Publishing"\n')
    out = str(tmp_path / "res")
    for command in (["run", str(config), "--out", out], ["config", str(config)]):
        assert main(command) == 2
        err = one_error_line(capsys)
        assert "planted:Publishing" in err and "--allow-import" in err
        assert not marker.exists() and "planted" not in sys.modules
    assert main(["run", str(config), "--out", out, "--allow-import", "--quiet"]) == 0
    assert marker.exists() and (tmp_path / "res" / "publishing" / "summary.json").is_file()
    capsys.readouterr()
    assert main(["config", "planted:Publishing"]) == 0  # typed by the user: allowed
    registered = tmp_path / "registered.toml"
    registered.write_text('experiment = "md-joint"\nsteps = 10\n')
    assert main(["config", str(registered)]) == 0


def test_stored_runs_get_the_permissions_of_the_umask_not_0700(tmp_path):
    """mkdtemp's private 0700 would hide finished runs from a group sharing the results."""
    store = ResultsStore(tmp_path)
    key = store.save({"a": 1}, tidy([0], {"loss": [1.0]}))
    mask = os.umask(0o022)
    os.umask(mask)
    assert (store.runs / key).stat().st_mode & 0o777 == 0o777 & ~mask
