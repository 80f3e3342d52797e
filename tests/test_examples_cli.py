"""The examples' command lines: one CPU thread unless --threads says otherwise, and a device
torch cannot use here (--device cuda on a CPU build) refused in one line, exit code 2, instead
of a traceback ending in an AssertionError."""

from __future__ import annotations

import importlib.util
import runpy
from pathlib import Path

import pytest
import torch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


class Stop(Exception):
    pass


def threads_when_training_starts(monkeypatch, *args: str) -> int:
    loop = load("own_training_loop")

    def stop(*_):
        raise Stop

    monkeypatch.setattr(loop, "make_data", stop)  # the first thing after the set-up
    with pytest.raises(Stop):
        loop.main(list(args))
    return torch.get_num_threads()


def test_the_training_loop_runs_on_one_thread_by_default(threads, monkeypatch):
    assert threads_when_training_starts(monkeypatch) == 1
    assert threads_when_training_starts(monkeypatch, "--threads", "2") == 2


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--threads", "0"], "own_training_loop.py: error: --threads: must be at least 1, got 0"),
        (["--device", "gpu"], "own_training_loop.py: error: --device gpu: "),
        pytest.param(
            ["--device", "cuda"],
            "own_training_loop.py: error: --device cuda: Torch not compiled with CUDA enabled",
            marks=pytest.mark.skipif(
                torch.backends.cuda.is_built(), reason="a CUDA build of torch: cuda may exist"
            ),
        ),
    ],
)
def test_a_device_or_thread_count_it_cannot_use_is_one_line(args, says, capsys):
    assert load("own_training_loop").main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(says), captured.err


@pytest.mark.slow
def test_the_quickstart_runs_on_one_thread(threads, capsys):
    runpy.run_path(str(EXAMPLES / "quickstart.py"))
    assert torch.get_num_threads() == 1
    assert "divergence" in capsys.readouterr().out
