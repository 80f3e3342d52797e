"""ngd-joint/W-aligns reads W's direction from its late increment W_t − W_{t/2} (issue 29):
the engine records, for runs that ask (`RunSpec.late_increment`), the alignment of W_t − W_s
with W_mm at every recorded step t, s the run's recorded step nearest t/2. Only those runs
change their store key, so other experiments' stored runs stay valid."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc
import pytest
import torch

from attnbias.data import dm
from attnbias.engine import Algorithm, RunSpec
from attnbias.engine.grid import log_grid
from attnbias.engine.sweep import run_sweep
from attnbias.metrics import alignment
from attnbias.store import ResultsStore


def spec(late_increment, keep_trajectory=False) -> RunSpec:
    rng = np.random.default_rng(0)
    init = {"W": 0.01 * rng.standard_normal((16, 16)), "v": 0.01 * rng.standard_normal(16)}
    return RunSpec({}, dm(n=4, d=16, opt_norm=3.0, noise=1.0, seed=1), Algorithm("GD", "gd", 0.5),
                   300, init, alpha="optimal", grid_points=20, keep_trajectory=keep_trajectory,
                   late_increment=late_increment)  # fmt: skip


def test_only_runs_that_ask_for_the_increment_change_their_store_key():
    plain, late = spec(False), spec(True)
    assert "measures" not in plain.record  # other experiments' stored runs keep their keys
    assert late.record["measures"] == ["increment_alignment"] and late.key != plain.key
    assert late.structure != plain.structure  # never measured in one batch
    with pytest.raises(TypeError, match="late_increment must be a bool"):
        spec("yes")


def test_the_increment_alignment_is_that_of_w_t_minus_w_at_the_step_nearest_half(tmp_path):
    (record,) = run_sweep([spec(True, keep_trajectory=True)], ResultsStore(tmp_path),
                          progress=False).records  # fmt: skip
    steps, W = record.arrays["trajectory_steps"], record.arrays["trajectory_W"]
    W_mm = torch.as_tensor(record.arrays["W_mm_2"])
    table = record.metrics.filter(pc.equal(record.metrics["metric"], "increment_alignment/2"))
    recorded = dict(zip(table["step"].to_pylist(), table["value"].to_pylist(), strict=True))
    assert list(steps) == list(log_grid(300, 20)) == sorted(recorded)
    for k, t in enumerate(steps):
        half = int(np.argmin(np.abs(steps - t / 2.0)))
        expected = float(alignment(torch.as_tensor(W[k] - W[half]), W_mm))
        assert recorded[int(t)] == pytest.approx(expected, abs=1e-12)
    # the late increment cancels W₀'s part no gradient reaches: it is nearer W_mm than W_t
    assert recorded[300] > float(alignment(torch.as_tensor(W[-1]), W_mm))
