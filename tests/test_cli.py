"""The `attnbias` command line, including a sweep killed mid-way and resumed."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import attnbias
import attnbias.cli
from attnbias import experiment_registry
from attnbias.cli import main
from attnbias.data import gaussian_unit
from attnbias.experiments import base
from attnbias.store import ResultsStore, config_key
from attnbias.svm import att_svm, selected_tokens

SRC = str(Path(attnbias.__file__).resolve().parents[1])


def attnbias_process(*args, **kw):
    """`attnbias ARGS` in a subprocess that imports this very source tree."""
    env = {**os.environ, "PYTHONPATH": SRC, "TQDM_DISABLE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "attnbias.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_list_names_every_experiment(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in experiment_registry.EXPERIMENTS:
        assert name in out


def test_svm_solves_a_file_and_saves_the_solution(tmp_path, capsys):
    P = gaussian_unit(4, 5, 6, seed=1)
    W = np.random.default_rng(0).standard_normal((6, 6))
    np.savez(tmp_path / "p.npz", X=P.X, z=P.z, W=W)
    assert main(["svm", str(tmp_path / "p.npz"), "--write", str(tmp_path / "s.npz")]) == 0
    out = capsys.readouterr().out
    assert "status     optimal" in out and "margin     1" in out
    expected = att_svm(P.X, P.z, selected_tokens(W, P.X, P.z))
    with np.load(tmp_path / "s.npz") as saved:
        np.testing.assert_allclose(saved["W"], expected.W, atol=1e-9)
        assert list(saved["alpha"]) == list(selected_tokens(W, P.X, P.z))
    assert f"{expected.norm:.10g}" in out


def test_svm_explains_missing_arrays(tmp_path, capsys):
    np.savez(tmp_path / "p.npz", X=np.zeros((2, 3, 4)), z=np.zeros((2, 4)))
    assert main(["svm", str(tmp_path / "p.npz"), "--alpha", "optimal"]) == 2
    assert "needs array(s) y+v" in capsys.readouterr().err


def test_bad_config_file_is_refused_naming_the_field(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('experiment = "md-local"\nlr = -0.1\n')
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "md-local: lr must be > 0" in capsys.readouterr().err
    path.write_text("seeds = 3\n")
    assert main(["run", str(path)]) == 2
    assert "must name its experiment" in capsys.readouterr().err
    assert main(["reproduce", "no-such-thing"]) == 2
    assert "unknown experiment 'no-such-thing'" in capsys.readouterr().err


def build_register_first() -> None:
    """The claims register states protocols from the package's own configs when it is first
    built (`register.entries()`, cached); a test that points CONFIG_DIR at its fakes and then
    runs `reproduce`, whose tally reads the register, builds it before."""
    from attnbias.judging import register

    register.entries()


def _fake_experiments(tmp_path, monkeypatch, names):
    """Register experiments that only echo their config, with a results table."""
    module = tmp_path / "fake_experiment.py"
    module.write_text(
        "from attnbias.judging.claims import Claim\n"
        "DESCRIPTION = 'fake'\n"
        "def run(config, out):\n"
        "    return {'claims': [Claim('it ran', True, {'seeds': config['seeds']})],\n"
        "            'tables': {'scores': [{'seeds': config['seeds'], 'acc': 0.123456}]}}\n"
    )
    (tmp_path / "configs").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    build_register_first()
    monkeypatch.setattr(experiment_registry, "CONFIG_DIR", tmp_path / "configs")
    for name in names:
        (tmp_path / "configs" / f"{name}.toml").write_text("seeds = 5\n[quick]\nseeds = 1\n")
        monkeypatch.setitem(experiment_registry.EXPERIMENTS, name, "fake_experiment")


def test_reproduce_dispatches_through_the_registry(tmp_path, monkeypatch, capsys):
    """Any registered experiment (the real-data ones too) runs by name the same way."""
    _fake_experiments(tmp_path, monkeypatch, ["fake"])
    assert main(["reproduce", "fake", "--quick", "--out", str(tmp_path / "res")]) == 0
    assert "[supported] it ran" in capsys.readouterr().out
    assert '"seeds": 1' in (tmp_path / "res" / "fake" / "summary.json").read_text()


def test_reproduce_several_names_into_one_report(tmp_path, monkeypatch, capsys):
    _fake_experiments(tmp_path, monkeypatch, ["fake-a", "fake-b"])
    monkeypatch.setattr(experiment_registry, "SYNTHETIC", ("fake-a",))
    report = tmp_path / "docs" / "RESULTS.md"
    args = ["reproduce", "all", "fake-b", "fake-a", "--out", str(tmp_path / "res")]
    assert main([*args, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert out.count("== fake-a") == 1 and out.count("== fake-b") == 1
    text = report.read_text()
    assert "attnbias reproduce all fake-b fake-a --full" in text  # names given → full scale
    assert "| seeds | acc |" in text and "| 5 | 0.1235 |" in text


@pytest.mark.slow
def test_killed_sweep_resumes_keeping_every_finished_run(tmp_path):
    """md-local with short ℓ2 runs and long ℓ3 runs in one batch: the ℓ2 runs are stored the
    moment they finish; killing the process then loses nothing, and the rerun trains only
    what was missing."""
    config = tmp_path / "sweep.toml"
    config.write_text('experiment = "md-local"\nseeds = 3\nps = [2.0, 3.0]\nsteps = [200, 30000]\n')
    root = tmp_path / "res"
    out = root / "md-local"  # run --out names the results root
    store = ResultsStore(out)
    proc = attnbias_process("run", str(config), "--out", str(root), "--quick")
    deadline = time.monotonic() + 120
    while len(store.keys()) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    finished = store.keys()
    # ℓ2's 3 figure runs; the zero-initialised and the diagonal's runs take ℓ3's 30,000 steps
    assert len(finished) == 3, "the 3 short runs (ℓ2's, one per seed) should be stored"
    assert not (out / "summary.json").exists(), "killed before the sweep completed"
    stamps = {p: p.stat().st_mtime_ns for k in finished for p in (out / "runs" / k).iterdir()}

    rerun = attnbias_process("run", str(config), "--out", str(root), "--quick")
    _, stderr = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, stderr
    summary = (out / "summary.json").read_text()
    assert '"trained": 8' in summary and '"reused": 3' in summary
    assert set(finished) < set(store.keys()) and len(store.keys()) == 11
    assert stamps == {p: p.stat().st_mtime_ns for p in stamps}


@pytest.mark.slow
def test_reproduce_writes_a_report(tmp_path, capsys):
    report = tmp_path / "docs" / "RESULTS.md"
    args = ["reproduce", "md-joint", "--quick", "--out", str(tmp_path / "res"), "--quiet"]
    assert main([*args, "--report", str(report)]) == 0
    text = report.read_text()
    assert "attnbias reproduce md-joint --quick" in text and "](figures/md-joint.png)" in text
    assert (tmp_path / "docs" / "figures" / "md-joint.png").exists()
    # a decided verdict's cell, with the parts against it in square brackets where some are
    decided = re.findall(r"\| (?:supported|\*\*not supported\*\*)(?: \[[^|\]]*\])? \|", text)
    assert len(decided) == 3, decided


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"attnbias {attnbias.__version__}"


@pytest.mark.parametrize("module", ["attnbias", "attnbias.cli"])
def test_python_dash_m_runs_the_command_line(module):
    # cli.py run as a script must define its command table before main() runs
    done = subprocess.run(
        [sys.executable, "-m", module, "svm", "/nonexistent.npz"], capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.startswith("attnbias: error: ")
    assert done.stderr.count("\n") == 1


def one_error_line(capsys) -> str:
    """The stderr of a failed command: exactly one line, no traceback."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnbias: error: "), err
    return err


def test_svm_invalid_norm_lists_the_valid_values(tmp_path, capsys):
    P = gaussian_unit(3, 4, 5, seed=1)
    np.savez(tmp_path / "p.npz", X=P.X, z=P.z, alpha=np.zeros(3, dtype=int))
    for norm in ("abc", "0.5", "nan"):
        assert main(["svm", str(tmp_path / "p.npz"), "--norm", norm]) == 2
        assert f"--norm must be {attnbias.cli.NORMS}, got {norm!r}" in one_error_line(capsys)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"X,z\n1,2\n", "is not an .npz archive"),
        (np.zeros(3).tobytes(), "is not an .npz archive"),
        ("truncated", "is not a readable .npz file"),
    ],
    ids=["csv", "raw-bytes", "truncated-npz"],
)
def test_svm_refuses_files_that_are_not_npz(tmp_path, capsys, content, message):
    path = tmp_path / "p.npz"
    if content == "truncated":
        P = gaussian_unit(3, 4, 5, seed=1)
        np.savez(path, X=P.X, z=P.z, alpha=np.zeros(3, dtype=int))
        content = path.read_bytes()[:300]
    path.write_bytes(content)
    assert main(["svm", str(path)]) == 2
    assert message in one_error_line(capsys)


def test_svm_out_writes_exactly_the_path_it_prints(tmp_path, capsys):
    P = gaussian_unit(3, 4, 5, seed=1)
    np.savez(tmp_path / "p.npz", X=P.X, z=P.z, alpha=np.zeros(3, dtype=int))
    out = tmp_path / "solx"
    assert main(["svm", str(tmp_path / "p.npz"), "--write", str(out)]) == 0
    assert f"saved      {out}\n" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz", "solx"]
    with np.load(out) as saved:
        assert saved["W"].shape == (5, 5)


def test_out_into_a_missing_or_unwritable_place_is_one_line(tmp_path, capsys):
    P = gaussian_unit(3, 4, 5, seed=1)
    np.savez(tmp_path / "p.npz", X=P.X, z=P.z, alpha=np.zeros(3, dtype=int))
    missing = tmp_path / "no" / "such" / "s.npz"
    assert main(["svm", str(tmp_path / "p.npz"), "--write", str(missing)]) == 2
    assert "does not exist" in one_error_line(capsys)
    assert main(["svm", str(tmp_path / "p.npz"), "--write", str(tmp_path)]) == 2  # a directory
    assert f"--write {tmp_path}: cannot write" in one_error_line(capsys)
    # --out is a results root everywhere: svm's old --out says what it is now
    assert main(["svm", str(tmp_path / "p.npz"), "--out", str(tmp_path / "s.npz")]) == 2
    assert f"is now --write {tmp_path / 's.npz'}" in one_error_line(capsys)
    below_a_file = tmp_path / "p.npz" / "results"
    assert main(["reproduce", "md-joint", "--quick", "--out", str(below_a_file)]) == 2
    assert str(below_a_file) in one_error_line(capsys)


def test_config_naming_an_unknown_experiment(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('experiment = "md-lokal"\n')
    assert main(["run", str(path)]) == 2
    err = one_error_line(capsys)
    assert "unknown experiment 'md-lokal'" in err and "md-local" in err and "configs" not in err


def test_missing_extra_is_named_before_training_and_marked_in_list(monkeypatch, capsys):
    monkeypatch.setitem(attnbias.cli.EXTRA_MODULES, "text-md", ("no_such_module_xyz",))
    assert main(["reproduce", "md-joint", "text-md", "--quick", "--out", "unused"]) == 2
    err = one_error_line(capsys)
    assert "text-md needs no_such_module_xyz" in err and "pip install 'attnbias[real]'" in err
    assert not Path("unused").exists()  # nothing trained, not even md-joint
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    marked = [line.split()[1] for line in lines if line.startswith("!")]
    # vision is marked too where Debian's Fashion-MNIST is not installed
    assert "text-md" in marked and set(marked) <= {"text-md", "vision"}
    assert "MISSING: text-md needs no_such_module_xyz" in "\n".join(lines)


def test_missing_dataset_stops_vision_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ATTNBIAS_FASHION_MNIST", str(tmp_path / "nowhere"))
    out = tmp_path / "res"
    assert main(["reproduce", "vision", "--quick", "--out", str(out)]) == 2
    err = one_error_line(capsys)
    assert "apt-get install dataset-fashion-mnist" in err and 'datasets = ["mnist"]' in err
    assert not out.exists()
    assert main(["list"]) == 0
    assert "! vision" in capsys.readouterr().out


def test_module_missing_at_run_time_and_interrupt_are_one_line(tmp_path, monkeypatch, capsys):
    _fake_experiments(tmp_path, monkeypatch, ["fake"])
    (tmp_path / "fake_needing_a_module.py").write_text(
        "DESCRIPTION = 'fake'\ndef run(config, out):\n    import no_such_module_xyz\n"
    )
    monkeypatch.setitem(experiment_registry.EXPERIMENTS, "fake", "fake_needing_a_module")
    args = ["reproduce", "fake", "--out", str(tmp_path / "res")]
    assert main(args) == 2
    assert "'no_such_module_xyz' is missing: pip install" in one_error_line(capsys)

    def interrupted(config, out, reuse_from=None, **options):
        raise KeyboardInterrupt

    monkeypatch.setattr(base, "run_experiment", interrupted)
    assert main(args) == 130
    assert "interrupted" in one_error_line(capsys)


def test_report_written_elsewhere_links_only_files_that_exist(tmp_path, monkeypatch):
    from attnbias.judging import report as report_module

    _fake_experiments(tmp_path, monkeypatch, ["fake"])
    report = tmp_path / "elsewhere" / "R.md"
    args = ["reproduce", "fake", "--quick", "--out", str(tmp_path / "res"), "--report"]
    assert main([*args, str(report)]) == 0
    text = report.read_text()
    targets = re.findall(r"\]\(([^)]+)\)", text)
    assert any(t.endswith("REAL_DATA.md") for t in targets), text
    for target in targets:
        assert (report.parent / target).exists(), target

    monkeypatch.setattr(report_module, "DOCS", tmp_path / "no-docs")  # an installed wheel
    assert main([*args, str(report), "--force"]) == 0  # the report differs: replaced
    text = report.read_text()
    assert "REAL_DATA.md in the attnbias repository" in text and "](" not in text


@pytest.mark.slow
def test_claims_register_is_written_from_a_results_root(tmp_path, capsys):
    root = tmp_path / "res"
    assert main(["reproduce", "ngd-joint", "--quick", "--quiet", "--out", str(root)]) == 0
    register = tmp_path / "CLAIMS.md"
    assert main(["claims", "--out", str(root), "--write", str(register)]) == 0
    text = register.read_text()
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    fastest = rows["ngd-joint/polyak-fastest"]
    assert "(quick scale: not evidence)" in fastest and "paired seeds →" in fastest
    assert "not run yet at full scale on the current code" in rows["text-md/keyword-attention"]
    assert "## Claims not tested here" in text
    assert main(["claims", "--out", str(tmp_path / "missing"), "--write", str(register)]) == 2
    assert "no such results root" in capsys.readouterr().err


def test_device_and_paper_options_are_refused_where_they_do_not_apply(tmp_path, capsys):
    out = str(tmp_path / "res")
    if not torch.cuda.is_available():  # every experiment takes --device; a GPU it lacks is refused
        assert main(["reproduce", "vision", "--quick", "--device", "cuda", "--out", out]) == 2
        assert "no CUDA device here" in capsys.readouterr().err
    assert main(["reproduce", "md-joint", "--paper", "--out", out]) == 2
    assert "md-joint has no paper-size configuration" in capsys.readouterr().err


def test_the_report_says_when_a_sweep_found_its_runs_finished(tmp_path):
    """A sweep regenerated from stored runs times only this invocation: the line says so."""
    from attnbias.judging.report import write_report

    summary = {
        "runs": 40,
        "trained": 0,
        "reused": 40,
        "svms_solved": 0,
        "seconds": 0.1,
        "claims": [],
    }
    report = tmp_path / "RESULTS.md"
    write_report({"ngd-fixed": summary}, {"ngd-fixed": {}}, report, "attnbias reproduce")
    text = report.read_text()  # no seconds: a rerun's are not the experiment's (issue 21)
    assert "40 runs (40 found finished), 0 SVMs solved;" in text and "0.1 s" not in text
    trained = {**summary, "trained": 40, "reused": 0}
    write_report(
        {"ngd-fixed": trained}, {"ngd-fixed": {}}, report, "attnbias reproduce", force=True
    )
    assert "40 runs, 0 SVMs solved;" in report.read_text()


# --- one meaning of --out, scales stated, reruns said, norms echoed (issue 21) ----------------


def _counting_experiment(tmp_path, monkeypatch, minutes=None):
    """Register "counting": an experiment whose summary counts 4 runs, all trained, publishing
    no run of its own (so an unchanged rerun reuses its outputs); FULL_SCALE_MINUTES if given."""
    (tmp_path / "counting_experiment.py").write_text(
        "from attnbias.judging.claims import Claim\n"
        "DESCRIPTION = 'counts'\n"
        + (f"FULL_SCALE_MINUTES = {minutes}\n" if minutes is not None else "")
        + "def run(config, out):\n"
        "    return {'claims': [Claim('it ran', True, {})], 'runs': 4, 'trained': 4,\n"
        "            'reused': 0, 'run_keys': []}\n"
    )
    (tmp_path / "configs").mkdir(exist_ok=True)
    (tmp_path / "configs" / "counting.toml").write_text("seeds = 5\n[quick]\nseeds = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    build_register_first()
    monkeypatch.setattr(experiment_registry, "CONFIG_DIR", tmp_path / "configs")
    monkeypatch.setitem(experiment_registry.EXPERIMENTS, "counting", "counting_experiment")
    monkeypatch.delitem(sys.modules, "counting_experiment", raising=False)  # another test's
    return "counting"


def test_run_out_is_a_results_root_as_for_reproduce(tmp_path, monkeypatch, capsys):
    name = _counting_experiment(tmp_path, monkeypatch)
    root = tmp_path / "res"
    assert main(["run", name, "--quick", "--out", str(root)]) == 0
    assert f"== counting (quick scale) → {root / name}" in capsys.readouterr().out
    assert (root / name / "summary.json").is_file() and not (root / "summary.json").exists()
    # reproduce writes the same directory: the run's outputs are reused
    assert main(["reproduce", name, "--quick", "--out", str(root)]) == 0
    assert "reused 4 runs and their published outputs" in capsys.readouterr().out
    # the old meaning (the experiment's own directory) is refused, saying what changed
    assert main(["run", name, "--quick", "--out", str(root / name)]) == 2
    err = one_error_line(capsys)
    assert "one experiment's directory" in err and f"give --out {root}" in err
    assert not (root / name / name).exists()


def test_a_rerun_says_it_reused_its_runs_not_zero_seconds(tmp_path, monkeypatch, capsys):
    name = _counting_experiment(tmp_path, monkeypatch)
    args = ["reproduce", name, "--quick", "--out", str(tmp_path / "res")]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert "trained 4 runs in " in first and "reused 4" not in first
    assert main(args) == 0
    again = capsys.readouterr().out
    assert "reused 4 runs and their published outputs (nothing recomputed" in again
    assert "1 experiment(s) in" in again and "(all reused)" in again


def test_a_long_experiment_states_scale_and_time_before_it_starts(tmp_path, monkeypatch, capsys):
    name = _counting_experiment(tmp_path, monkeypatch, minutes=75)
    assert main(["reproduce", name, "--out", str(tmp_path / "res")]) == 0
    out = capsys.readouterr().out
    note = "counting at full scale: about 75 min"
    assert note in out and "--quick for a smoke run" in out
    assert out.index(note) < out.index("== counting (full scale)")
    assert main(["reproduce", name, "--quick", "--out", str(tmp_path / "quick")]) == 0
    assert "about 75 min" not in capsys.readouterr().out
    # a rerun whose runs are all stored says so instead of estimating a training it won't do
    assert main(["reproduce", name, "--out", str(tmp_path / "res")]) == 0
    out = capsys.readouterr().out
    assert "about 75 min" not in out
    stored = (
        f"counting: its published outputs of this config are stored in {tmp_path / 'res' / name}"
    )
    assert stored in out
    # where the constants of the built-in experiments live, and that they are long
    assert attnbias.cli.full_scale_minutes("text-md") >= attnbias.cli.LONG_MINUTES
    assert attnbias.cli.full_scale_minutes("md-local") is None


def test_the_paper_scale_note_states_the_measured_gpu_bound():
    paper = experiment_registry.load_config("text-md", paper=True)
    note = attnbias.cli.duration_note("text-md", paper, paper=True)
    assert "about 33 h of training to the epoch cap on one NVIDIA H200, one run at a time" in note
    assert "meant for a GPU: --device cuda" in note
    full = attnbias.cli.duration_note("text-md", experiment_registry.load_config("text-md"), False)
    assert "H200" not in full  # the full scale's note is the CPU's
    assert attnbias.cli.run_module_number("md-local", "PAPER_SCALE_GPU_HOURS") is None


def test_svm_norm_names_are_echoed_as_given_and_explained(tmp_path, capsys):
    P = gaussian_unit(3, 4, 5, seed=1)
    np.savez(tmp_path / "p.npz", X=P.X, z=P.z, alpha=np.zeros(3, dtype=int))
    norms = {}
    for given, meaning in [
        ("fro", "entrywise ℓ2 = Frobenius"),
        ("2", "entrywise ℓ2 = Frobenius"),
        ("spectral", "spectral: largest singular value"),
        ("1.5", "entrywise ℓ1.5"),
    ]:
        assert main(["svm", str(tmp_path / "p.npz"), "--norm", given]) == 0
        out = capsys.readouterr().out
        assert f"norm       {given} ({meaning})\n" in out
        norms[given] = out.split("‖W_mm‖")[1].split()[0]
    assert norms["fro"] == norms["2"] != norms["spectral"]
    with pytest.raises(SystemExit):
        main(["svm", "--help"])
    helped = " ".join(capsys.readouterr().out.split())
    assert "2 = fro (entrywise ℓ2 = Frobenius)" in helped and "not NumPy's matrix ord" in helped


def _results_root_with_a_summary(root: Path) -> None:
    (root / "md-joint").mkdir(parents=True)
    (root / "md-joint" / "summary.json").write_text('{"experiment": "md-joint", "claims": []}')


def test_claims_prints_to_stdout_and_overwrites_a_different_file_only_with_force(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    _results_root_with_a_summary(tmp_path / "results")
    assert main(["claims"]) == 0  # ./results, to stdout: nothing written
    out = capsys.readouterr().out
    assert out.startswith("# Claims register")
    assert "Generated by `attnbias claims --out results` from" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]

    register = tmp_path / "docs" / "CLAIMS.md"
    args = ["claims", "--write", str(register)]
    assert main(args) == 0 and register.read_text().startswith("# Claims register")
    assert f"claims register: {register}\n" in capsys.readouterr().out
    assert main(args) == 0  # the same content: nothing to refuse
    assert "(unchanged)" in capsys.readouterr().out
    register.write_text("a committed register\n")
    assert main(args) == 2
    err = one_error_line(capsys)
    assert f"--write {register}: the file exists and differs" in err and "--force" in err
    assert register.read_text() == "a committed register\n"
    assert main([*args, "--force"]) == 0
    assert register.read_text().startswith("# Claims register")
    with pytest.raises(SystemExit):
        main(["claims", "--help"])
    assert "(default: print it)" in capsys.readouterr().out


def test_claims_of_a_missing_root_names_the_command_that_makes_it(tmp_path, monkeypatch, capsys):
    """The README's example right after its main job (`attnbias reproduce` writes ./results)."""
    monkeypatch.chdir(tmp_path)
    _results_root_with_a_summary(tmp_path / "results")
    assert main(["claims", "--out", "results/full", "--write", "docs/CLAIMS.md"]) == 2
    err = one_error_line(capsys)
    assert "`attnbias reproduce all --full --out results/full`" in err
    assert "./results has summaries" in err and "--out results" in err
    assert not (tmp_path / "docs").exists()
    assert main(["claims", "--out", "results/md-joint"]) == 2  # an experiment's directory
    assert "holds no experiment's summary" in one_error_line(capsys)


def test_verbosity_flags_go_before_or_after_the_command(tmp_path, monkeypatch, capsys):
    name = _counting_experiment(tmp_path, monkeypatch)
    for argv in (["-q", "run", name], ["run", name, "--quiet"], ["--verbose", "run", name]):
        assert main([*argv, "--quick", "--out", str(tmp_path / "q")]) == 0
        assert "== counting" in capsys.readouterr().out
    assert main(["-q", "run", name, "-v"]) == 2
    assert "exclude each other" in one_error_line(capsys)


def test_stored_work_names_what_a_rerun_reuses(monkeypatch, tmp_path):
    config = experiment_registry.load_config("md-local", quick=True)
    manifest = {
        "config_hash": config_key(config.to_dict()),
        "code_version": "old",
        "runs": ["a", "b"],
    }
    monkeypatch.setattr(base.ResultsStore, "current_manifest", lambda self: ("h", manifest))
    monkeypatch.setattr(base.ResultsStore, "has", lambda self, key: True)
    assert base.stored_work(config, tmp_path) == "its 2 runs of this config"
    monkeypatch.setattr(base, "code_version", lambda: "old")
    assert base.stored_work(config, tmp_path) == "its published outputs of this config"
    monkeypatch.setattr(base.ResultsStore, "has", lambda self, key: key == "a")
    assert base.stored_work(config, tmp_path) is None  # a run is missing: it will train
    manifest["config_hash"] = "another"
    monkeypatch.setattr(base.ResultsStore, "has", lambda self, key: True)
    assert base.stored_work(config, tmp_path) is None
