"""The batched engine runs the attnbias.optim algorithms exactly, many runs at once."""

import numpy as np
import pytest
import torch

from attnbias.data import Problem, example1, gaussian_unit
from attnbias.engine import Algorithm, RunBatch, RunSpec, log_grid, simulate, union_grid
from attnbias.engine.kernel import Stack
from attnbias.engine.single_run import run_reference
from attnbias.engine.sweep import run_sweep
from attnbias.model import risk_and_gradients
from attnbias.store import ResultsStore

pytestmark = pytest.mark.usefixtures("one_thread")

ALGORITHMS = [
    Algorithm("GD", "gd", 0.5),
    Algorithm("NGD", "ngd", 0.1),
    Algorithm("NGD-mom", "ngd", 0.1, momentum=0.9),
    Algorithm("NGD-per-tensor", "ngd", 0.1, normalize="per_tensor"),
    Algorithm("Polyak", "polyak", 5.0, f_star=0.0),
    Algorithm("MD-1.75", "md", 0.1, p=1.75, normalize="per_tensor"),
    Algorithm("MD-3", "md", 0.1, p=3.0, normalize="per_tensor"),
    Algorithm("MD-3-global", "md", 0.1, p=3.0, normalize="global"),
    Algorithm("MD-1.5-plain", "md", 0.05, p=1.5),
    Algorithm("GD-loss", "gd", 0.1, normalize="loss"),
]


def init_of(kind, d, rng):
    if kind == "W":
        return {"W": rng.standard_normal((d, d))}
    if kind == "W+v":
        return {"W": 0.3 * rng.standard_normal((d, d)), "v": 0.3 * rng.standard_normal(d)}
    return {"K": 0.5 * rng.standard_normal((d, d)), "Q": 0.5 * rng.standard_normal((d, d))}


def batched_trajectories(specs, grid):
    out = {}

    def keep(done):
        for j, i in enumerate(done.index):
            out[int(i)] = {k: s[j].numpy() for k, s in done.snapshots.items()}

    simulate(RunBatch.from_specs(specs), grid, keep)
    return out


@pytest.mark.parametrize("kind", ["W", "W+v", "KQ"])
def test_batched_engine_equals_separate_optimizer_runs(kind):
    """Every algorithm, in one batch with all the others, matches its own attnbias.optim run on
    an AttentionClassifier (autograd) at every step to 1e-12."""
    rng = np.random.default_rng(1)
    steps = 25
    specs = [
        RunSpec({"i": i}, gaussian_unit(4, 5, 6, seed=i), a, steps, init_of(kind, 6, rng))
        for i, a in enumerate(ALGORITHMS)
    ]
    grid = np.arange(steps + 1)
    batched = batched_trajectories(specs, grid)
    for i, spec in enumerate(specs):
        ref = run_reference(spec, grid)
        for name in batched[i]:
            scale = max(1.0, np.abs(ref[name]).max())
            err = np.abs(batched[i][name] - ref[name]).max() / scale
            assert err < 1e-12, (spec.algorithm.name, name, err)
        moved = np.abs(ref["W"][-1] - ref["W"][0]).max()
        assert moved > 1e-3, f"{spec.algorithm.name} did not move: the test would be vacuous"


def test_polyak_with_optimal_f_star_matches_reference():
    rng = np.random.default_rng(2)
    problem = example1(4, 4, 16, seed=3)
    spec = RunSpec(
        {},
        problem,
        Algorithm("Polyak", "polyak", 100.0, f_star="optimal"),
        30,
        {"W": 0.1 * rng.standard_normal((16, 16))},
    )
    assert spec.f_star() > 0.3  # logistic loss of score 1: log(1 + e^-1)
    grid = np.arange(31)
    ref = run_reference(spec, grid)["W"]
    assert np.abs(batched_trajectories([spec], grid)[0]["W"] - ref).max() < 1e-12


def test_runs_of_different_lengths_finish_separately_and_agree_with_solo_runs():
    """Runs leave the batch when done (and are handed over at once); the rest go on unchanged."""
    rng = np.random.default_rng(3)
    algorithm = Algorithm("MD", "md", 0.1, p=1.75, normalize="per_tensor")
    specs = [
        RunSpec(
            {"i": i},
            gaussian_unit(3, 4, 5, seed=i),
            algorithm,
            s,
            {"W": rng.standard_normal((5, 5))},
        )
        for i, s in enumerate([5, 40, 12, 40])
    ]
    events = []
    grid = union_grid([(s.steps, s.grid_points) for s in specs])
    simulate(
        RunBatch.from_specs(specs),
        grid,
        lambda done: events.append((done.steps, list(done.index), done)),
    )
    assert [(t, sorted(i)) for t, i, _ in events] == [(5, [0]), (12, [2]), (40, [1, 3])]
    for _, index, done in events:
        for j, i in enumerate(index):
            solo = []
            simulate(RunBatch.from_specs([specs[i]]), grid, solo.append)
            np.testing.assert_allclose(
                done.final["W"][j], solo[0].final["W"][0], rtol=0, atol=1e-12
            )
            own = np.searchsorted(done.grid, log_grid(specs[i].steps, specs[i].grid_points))
            assert done.grid[own][-1] == specs[i].steps


def test_kernel_equals_model_closed_form():
    rng = np.random.default_rng(4)
    X, z, y = (
        torch.as_tensor(a)
        for a in (
            rng.standard_normal((7, 5, 6, 4)),
            rng.standard_normal((7, 5, 4)),
            rng.choice([-1.0, 1.0], (7, 5)),
        )
    )
    v, W = (
        torch.as_tensor(rng.standard_normal((7, 4))),
        torch.as_tensor(3 * rng.standard_normal((7, 4, 4))),
    )
    for loss in ("logistic", "exponential", "correlation"):
        L, gW, gv = risk_and_gradients(W, v, X, z, y, loss)
        for stack, head in ((Stack(X, z, y, loss, v), None), (Stack(X, z, y, loss), v)):
            L2, gW2, gv2 = stack.risk_and_gradients(W, head)
            torch.testing.assert_close(L2, L, rtol=1e-12, atol=1e-14)
            torch.testing.assert_close(gW2, gW, rtol=1e-12, atol=1e-14)
            if head is not None:
                torch.testing.assert_close(gv2, gv, rtol=1e-12, atol=1e-14)


def test_underflowed_gradient_stops_the_run_without_nan():
    """Saturated attention makes gradients underflow; a normalized step then does nothing."""
    problem = gaussian_unit(3, 4, 5, seed=0)
    W = 1e4 * np.random.default_rng(0).standard_normal((5, 5))
    spec = RunSpec({}, problem, Algorithm("NGD", "ngd", 0.1, momentum=0.5), 5, {"W": W})
    out = []
    simulate(RunBatch.from_specs([spec]), log_grid(5), out.append)
    assert np.isfinite(out[0].final["W"]).all()


def test_log_grid():
    grid = log_grid(20000, 60)
    assert grid[0] == 0 and grid[1] == 1 and grid[-1] == 20000
    assert np.all(np.diff(grid) > 0) and 40 <= len(grid) <= 61
    assert list(log_grid(5, 60)) == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"name": "a", "optimizer": "md", "lr": -1}, r"algorithms\[0\]\.lr must be > 0"),
        ({"name": "a", "optimizer": "lion", "lr": 1}, r"algorithms\[0\]\.optimizer must be one of"),
        ({"name": "a", "optimizer": "gd"}, r"algorithms\[0\]\.lr is missing"),
        ({"name": "a", "optimizer": "gd", "lr": 1, "momentum": 0.9}, r"momentum applies only"),
        ({"name": "a", "optimizer": "ngd", "lr": 1, "normalize": "loss"}, r"normalize must be"),
        ({"name": "a", "optimizer": "md", "lr": 1, "p": 1}, r"\.p must be > 1"),
        ({"name": "a", "optimizer": "gd", "lr": 1, "steps": 3}, r"\.steps is not a field"),
    ],
)
def test_algorithm_config_errors_name_the_field(spec, message):
    with pytest.raises(ValueError, match=message):
        Algorithm.from_dict(spec, "algorithms[0]")


def test_a_batch_needs_one_structure():
    rng = np.random.default_rng(0)
    a = Algorithm("GD", "gd", 0.1)
    specs = [
        RunSpec({}, gaussian_unit(3, 4, 5, seed=0), a, 5, {"W": rng.standard_normal((5, 5))}),
        RunSpec({}, gaussian_unit(3, 5, 5, seed=0), a, 5, {"W": rng.standard_normal((5, 5))}),
    ]
    with pytest.raises(ValueError, match="one structure"):
        RunBatch.from_specs(specs)


def test_an_infeasible_svm_is_reported_not_raised(tmp_path):
    """Two equal tokens make the Att-SVM of the optimal tokens infeasible: the run is stored
    with NaN comparisons and the reason, and the sweep goes on."""
    P = example1(4, 4, 16, seed=0)
    X = P.X.copy()
    other = (P.opt[0] + 1) % 4
    X[0, other] = X[0, P.opt[0]]
    z = X[:, 0].copy()
    bad = Problem(X, z, P.y, P.v, "self", opt=P.opt)
    spec = RunSpec(
        {}, bad, Algorithm("NGD", "ngd", 0.1), 20, {"W": np.zeros((16, 16))}, alpha="optimal"
    )
    (record,) = run_sweep([spec], ResultsStore(tmp_path), progress=False).records
    assert record.info["svm"]["2"]["status"] == "infeasible"
    assert "equals the selected token" in record.info["svm"]["2"]["error"]
    values = record.metrics.column("value").to_numpy()
    metric = np.array(record.metrics.column("metric").to_pylist())
    assert np.isnan(values[metric == "alignment/2"]).all()
    assert np.isfinite(values[metric == "loss"]).all()
