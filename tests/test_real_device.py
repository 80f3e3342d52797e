"""The optimiser comparisons (text-finetune, vision) train where their `device` says; a run is
the same stored run wherever it trained (the device is not in its key)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from attnbias.experiment_registry import load_config
from attnbias.experiments.base import run_experiment
from attnbias.store import ResultsStore

pytestmark = pytest.mark.real

DIGITS = {"datasets": ["digits"], "seeds": [0], "steps": 4, "eval_every": 2, "search_steps": 2,
          "rate_grid": [1.0], "train_size": 64, "test_size": 32, "batch_size": 16,
          "patch_size": 4}  # fmt: skip


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present")
def test_device_cuda_without_a_gpu_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "from attnbias.cli import main; raise SystemExit(main())",
         "reproduce", "vision", "--quick", "--device", "cuda", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "no CUDA device" in done.stderr
    assert done.stderr.strip().count("\n") == 0


def stored_losses(out) -> dict[tuple, list[float]]:
    """(optimizer, role) → the train losses of every run stored in out."""
    store = ResultsStore(out)
    found = {}
    for record in map(store.load, store.keys()):
        table = record.metrics.to_pydict()
        losses = [v for m, v in zip(table["metric"], table["value"]) if m == "train_loss"]
        found[(record.config["optimizer"]["name"], record.config.get("role", ""))] = losses
    return found


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_a_cuda_run_trains_on_the_gpu_and_matches_the_cpu_run(tmp_path):
    losses = {}
    for device in ("cpu", "cuda"):
        config = load_config("vision", quick=True, overrides={**DIGITS, "device": device})
        summary = run_experiment(config, tmp_path / device)
        assert summary["runs"] > 0 and not summary["diverged"]
        losses[device] = stored_losses(tmp_path / device)
    assert losses["cpu"].keys() == losses["cuda"].keys()
    for key, cpu in losses["cpu"].items():
        torch.testing.assert_close(
            torch.tensor(losses["cuda"][key]), torch.tensor(cpu), rtol=1e-4, atol=1e-6
        )
