"""Progress and logs anywhere: a line every N seconds when stderr is not a terminal, phases
announced, --quiet / --verbose, and no print() in library code (issue 21)."""

import ast
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import attnbias
from attnbias import experiment_registry, log
from attnbias.cli import main

SRC = Path(attnbias.__file__).resolve().parent

# "md-joint: 1/6 runs done, 1,200/2,000 steps (60 %), 85.2 steps/s, 0:00:14 elapsed, ETA 0:00:09"
PERIODIC = re.compile(
    r"^attnbias: md-joint: \d+/6 runs done, [\d,]+/[\d,]+ steps \(\d+ %\), [\d.]+k? steps/s, "
    r"\d+:\d\d:\d\d elapsed, ETA \d+:\d\d:\d\d$"
)


def run_cli(tmp_path, *args, seconds="0.05"):
    """`attnbias ARGS` in a subprocess, stderr redirected to a file (as under nohup or SLURM):
    (exit code, stdout, stderr's lines)."""
    err = tmp_path / "stderr.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(SRC.parent),
        log.PROGRESS_SECONDS_ENV: seconds,
        "OMP_NUM_THREADS": "1",
    }
    with open(err, "w") as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "attnbias.cli", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=300,
        )
    return done.returncode, done.stdout, err.read_text().splitlines()


@pytest.mark.slow  # a subprocess and a real sweep: ~10 s; the fake-clock tests below are fast
def test_redirected_stderr_gets_periodic_progress_lines_and_phases(tmp_path, capsys):
    config = tmp_path / "small.toml"
    config.write_text('experiment = "md-joint"\nseeds = 2\nsteps = 600\n')
    args = ["run", str(config), "--out", str(tmp_path / "res")]
    code, out, err = run_cli(tmp_path, *args, seconds="0.02")
    assert code == 0, err
    periodic = [line for line in err if PERIODIC.match(line)]
    assert len(periodic) >= 2, err
    assert err[0] == "attnbias: md-joint: starting: 6 runs, 600 steps", err
    (end,) = [line for line in err if re.search(r", done in \d+:\d\d:\d\d$", line)]
    assert end.startswith("attnbias: md-joint: 6/6 runs done, 600/600 steps (100 %), "), end
    # each phase after the loop is said, in order
    order = [
        periodic[-1],
        "attnbias: md-joint: solving Att-SVMs and measuring the last 6 runs",
        end,  # runs trained here come back as saved: no reading back (store.save_record)
        "attnbias: md-joint: computing curves and claims",
        "attnbias: drawing figure md-joint (png)",
    ]
    at = [err.index(line) for line in order]
    assert at == sorted(at), err
    assert "attnbias:" not in out and "[supported]" in out  # results on stdout only

    # a rerun reuses everything: no progress at all, and it says so
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert err == "" and "reused 6 runs and their published outputs" in out


@pytest.fixture
def logging_experiment(tmp_path, monkeypatch):
    """Register "chatty": it reports progress through log.Progress and logs a DEBUG detail."""
    (tmp_path / "chatty_experiment.py").write_text(
        "import logging\n"
        "from attnbias.judging.claims import Claim\n"
        "from attnbias.log import Progress\n"
        "logger = logging.getLogger('attnbias.chatty')\n"
        "DESCRIPTION = 'logs'\n"
        "def run(config, out):\n"
        "    with Progress('chatty', 3, logger=logger) as bar:\n"
        "        bar.update(3)\n"
        "    logger.debug('a detail')\n"
        "    return {'claims': [Claim('it ran', True, {})]}\n"
    )
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "chatty.toml").write_text("seeds = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(experiment_registry, "CONFIG_DIR", tmp_path / "configs")
    monkeypatch.setitem(experiment_registry.EXPERIMENTS, "chatty", "chatty_experiment")
    monkeypatch.delitem(sys.modules, "chatty_experiment", raising=False)
    monkeypatch.setenv(log.PROGRESS_SECONDS_ENV, "0.001")
    return "chatty"


def test_quiet_prints_no_progress_and_verbose_stamps_lines(logging_experiment, tmp_path, capsys):
    def stderr(*flags) -> list[str]:
        argv = ["run", logging_experiment, "--out", str(tmp_path / "o")]
        assert main([*flags, *argv]) == 0  # a fake: its outputs are made anew every time
        return capsys.readouterr().err.splitlines()

    default = stderr()
    assert default[0] == "attnbias: chatty: starting: 3 steps"
    assert re.fullmatch(r"attnbias: chatty: 3/3 steps \(100 %\), .*, done in 0:00:00", default[1])
    assert len(default) == 2  # no DEBUG line
    assert stderr("--quiet") == [] and stderr("-q") == []
    verbose = stderr("--verbose")
    stamp = r"\d\d:\d\d:\d\d "
    assert re.fullmatch(stamp + r"INFO attnbias\.chatty: chatty: starting: 3 steps", verbose[0])
    assert re.fullmatch(stamp + r"DEBUG attnbias\.chatty: a detail", verbose[-1])
    # the CLI leaves logging as it found it
    assert logging.getLogger("attnbias").handlers == []
    assert logging.getLogger("attnbias").level == logging.NOTSET


def test_a_bad_progress_interval_is_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    for value in ("abc", "0", "-1", "inf"):
        monkeypatch.setenv(log.PROGRESS_SECONDS_ENV, value)
        assert main(["run", "md-joint", "--quick", "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{log.PROGRESS_SECONDS_ENV} must be a positive" in err
    assert not (tmp_path / "r").exists()


class Clock:
    """time.monotonic for log.py: each reading is `step` seconds after the last."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_progress_logs_every_interval_with_rate_and_eta(monkeypatch, caplog):
    monkeypatch.setattr(log, "stderr_is_terminal", lambda: False)
    monkeypatch.setattr(log, "monotonic", Clock(1.0))
    monkeypatch.setenv(log.PROGRESS_SECONDS_ENV, "2")
    logger = logging.getLogger("attnbias.test")
    with caplog.at_level(logging.INFO, "attnbias"), log.Progress("job", 10, logger=logger) as bar:
        for _ in range(10):
            bar.update()
            bar.set_postfix("loss 0.5")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "job: starting: 10 steps"
    # clock: start 1 s, each update one more second; a line once 2 s have passed, not at 100 %
    assert lines[1] == "job: 2/10 steps (20 %), 1 steps/s, 0:00:02 elapsed, ETA 0:00:08, loss 0.5"
    assert len(lines) == 1 + 4 + 1  # start, steps 2, 4, 6, 8, end
    assert lines[-1] == "job: 10/10 steps (100 %), 0.909 steps/s, done in 0:00:11, loss 0.5"


def test_progress_is_a_bar_on_a_terminal_and_off_when_the_logger_is_quiet(monkeypatch, caplog):
    monkeypatch.setattr(log, "stderr_is_terminal", lambda: True)
    logger = logging.getLogger("attnbias.test")
    with caplog.at_level(logging.INFO, "attnbias"), log.Progress("job", 3, logger=logger) as bar:
        assert bar.bar is not None
        bar.update(3)
    assert caplog.records == []
    for terminal in (True, False):
        monkeypatch.setattr(log, "stderr_is_terminal", lambda terminal=terminal: terminal)
        with caplog.at_level(logging.WARNING, "attnbias"), log.Progress("job", 3) as bar:
            bar.update(3)
            assert bar.bar is None and bar.every is None
    assert caplog.records == []
    with log.Progress("job", 3, enabled=False) as bar:
        assert bar.bar is None and bar.every is None


def test_real_training_logs_steps_and_loss_when_redirected(monkeypatch, caplog, tmp_path):
    from attnbias.real.train import train
    from tiny_model import Tiny, tiny_data

    monkeypatch.setattr(log, "stderr_is_terminal", lambda: False)
    monkeypatch.setattr(log, "monotonic", Clock(1.0))
    monkeypatch.setenv(log.PROGRESS_SECONDS_ENV, "1")
    with caplog.at_level(logging.INFO, "attnbias"):
        train(Tiny(), tiny_data(), None, {"name": "sgd", "lr": 0.1}, steps=4,
              batch_size=4, seed=0, desc="tiny")  # fmt: skip
    lines = [r.getMessage() for r in caplog.records if r.name == "attnbias.real.train"]
    assert lines[0] == "tiny: starting: 4 steps"
    assert re.fullmatch(r"tiny: 1/4 steps \(25 %\), .*, ETA 0:00:0\d, loss \d\.\d{3}", lines[1])


def library_calls(name: str) -> list[str]:
    """Where library code (not the command line) calls `name`(…): "file:line"."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "cli.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name:
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return found


def test_library_code_logs_instead_of_printing():
    assert library_calls("print") == []
    imports = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if re.search(r"^\s*from tqdm|^\s*import tqdm", p.read_text(), re.M)
    ]
    assert imports == ["log.py"]  # every bar goes through log.Progress


@pytest.mark.parametrize("seconds, text", [(0, "0:00:00"), (59.6, "0:01:00"), (3725, "1:02:05")])
def test_durations_read_as_hours_minutes_seconds(seconds, text):
    assert log.duration(seconds) == text
