"""The re-examinations of issue 16's three negative results: the decaying learning rate of
torch's optimisers (Algorithm.lr_decay) steps exactly η₀·(t + 1)^(−a), in the engine as in a
single run; the three experiments' configs are checked; their claims all have register entries."""

import numpy as np
import pytest
import torch

from attnbias.data import gaussian_unit
from attnbias.engine import Algorithm, RunBatch, RunSpec, simulate
from attnbias.engine.single_run import run_reference
from attnbias.experiments import atlas, load_config, run_experiment
from attnbias.judging.register import unregistered
from attnbias.model import risk_and_gradients
from attnbias.optim.steepest import spectral_direction

pytestmark = pytest.mark.usefixtures("one_thread")

NAMES = ("reexamine-muon", "reexamine-adam", "reexamine-polyak")
ADAM = {"eps": 1e-300, "betas": (0.9, 0.95)}


def test_lr_at_decays_as_a_power_of_the_step():
    a = Algorithm("A", "adam", 0.2, lr_decay=0.5)
    assert [a.lr_at(t) for t in (0, 3, 99)] == pytest.approx([0.2, 0.1, 0.02])
    assert Algorithm("A", "adam", 0.2).lr_at(10**6) == 0.2  # a = 0: constant


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ({"optimizer": "adam", "lr_decay": 1.5}, ValueError, "lr_decay must be <= 1"),
        ({"optimizer": "adam", "lr_decay": -0.1}, ValueError, "lr_decay must be >= 0"),
        ({"optimizer": "adam", "lr_decay": "fast"}, ValueError, "lr_decay must be a real number"),
        ({"optimizer": "ngd", "lr_decay": 0.5}, ValueError, "lr_decay applies only to optimizer"),
    ],
)
def test_bad_lr_decay_is_refused_naming_the_field(spec, error, message):
    with pytest.raises(error, match=message) as refused:
        Algorithm.from_dict({"name": "A", "lr": 0.1, **spec}, "algorithms[0]")
    assert str(refused.value).startswith("algorithms[0].lr_decay")


def test_a_constant_rate_keeps_its_old_key_and_a_decay_round_trips():
    plain = Algorithm("A", "adam", 0.1, options={"eps": 1e-8})
    assert "lr_decay" not in plain.to_dict()  # runs stored before the field keep their keys
    decayed = Algorithm("A", "adam", 0.1, lr_decay=0.25)
    assert decayed.to_dict()["lr_decay"] == 0.25
    assert Algorithm.from_dict(decayed.to_dict()) == decayed


def spec(algorithm, steps, seed=0):
    rng = np.random.default_rng(seed)
    return RunSpec({"i": seed}, gaussian_unit(4, 5, 6, seed=seed), algorithm, steps,
                   {"W": 0.5 * rng.standard_normal((6, 6))})  # fmt: skip


def trajectories(specs, grid) -> dict[int, np.ndarray]:
    out = {}

    def keep(done):
        for j, i in enumerate(done.index):
            out[int(i)] = done.snapshots["W"][j].numpy()

    simulate(RunBatch.from_specs(specs), grid, keep)
    return out


def test_sgd_with_decay_takes_the_steps_of_the_formula():
    """Independent of Algorithm.schedule: W ← W − η₀ (t + 1)^(−a) ∇L(W), by hand."""
    steps, lr, a = 30, 0.5, 0.7
    s = spec(Algorithm("SGD", "sgd", lr, lr_decay=a), steps)
    X, z, y, _ = s.problem.tensors()
    v, W = torch.as_tensor(s.problem.v), torch.as_tensor(s.init["W"])
    for t in range(steps):
        _, grad, _ = risk_and_gradients(W, v, X, z, y)
        W = W - lr * (t + 1.0) ** -a * grad
    engine = trajectories([s], np.arange(steps + 1))[0]
    np.testing.assert_allclose(engine[-1], W.numpy(), rtol=0, atol=1e-12)
    constant = trajectories([spec(Algorithm("SGD", "sgd", lr), steps)], np.arange(steps + 1))[0]
    assert np.abs(constant[-1] - engine[-1]).max() > 1e-2  # the decay matters here


def test_engine_keeps_the_schedule_when_runs_leave_the_batch():
    """Adam with a decaying rate, in one batch with runs that finish earlier (the batch is cut
    down mid-run), equals its single autograd run with torch's Adam step for step."""
    decayed = Algorithm("Adam-decay", "adam", 0.05, lr_decay=0.5, options=ADAM)
    constant = Algorithm("Adam", "adam", 0.05, options=ADAM)
    specs = [spec(decayed, 40, 1), spec(constant, 12, 2), spec(decayed, 7, 3), spec(decayed, 40, 4)]
    grid = np.arange(41)
    batched = trajectories(specs, grid)
    for i, s in enumerate(specs):
        reference = run_reference(s, grid[: s.steps + 1])["W"]
        np.testing.assert_allclose(batched[i], reference, rtol=0, atol=1e-12, err_msg=str(i))
    alone = trajectories([spec(constant, 40, 1)], grid)[0]
    assert np.abs(alone[-1] - batched[0][-1]).max() > 1e-2  # the decay is not a no-op


@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        ("reexamine-muon", {"stalls": {"Muon": "Adam"}}, "stalls.Muon = 'Adam' is not one of"),
        ("reexamine-muon", {"closer": {"SpectralDescent": ["Muon"]}}, "closer.SpectralDescent:"),
        ("reexamine-muon", {"closer": {"NS-f64": ["Muon", "Adam"]}}, "closer.NS-f64 = 'Adam' is"),
        ("reexamine-muon", {"closer": {"NS-f64": []}}, "closer.NS-f64 is empty"),
        ("reexamine-adam", {"like": {"Adam": "Adam-decay"}}, "like.Adam = 'Adam-decay' has no"),
        (
            "reexamine-adam",
            {
                "explained_if": {
                    "constant-rate": ["adam-stalls"],
                    "short-run": ["adam-eps0-like-signgd"],
                }
            },
            r"explained_if.constant-rate\[0\] = 'adam-stalls' is not one of the claims",
        ),
        ("reexamine-muon", {"explains": {"bfloat16": "?"}}, "must have the same keys"),
        ("reexamine-muon", {"tuned_in": "fro"}, "tuned_in = 'fro' is not one of norms"),
        ("reexamine-muon", {"longer": {"Adam": 10}}, "longer.Adam is not one of the algorithms"),
        ("reexamine-muon", {"longer": {"Muon": 0}}, "longer.Muon"),
        (
            "reexamine-muon",
            {"at_config_step": ["muon-stalls", "adam-stalls"]},
            r"at_config_step\[1\] = 'adam-stalls' is not one of the claims",
        ),
        (
            "reexamine-muon",
            {"at_config_step": ["muon-f64-nesterov-like-spectraldescent"]},
            r"explained_if.torch-muon\[0\] = 'muon-stalls-at-config-step' is not one of",
        ),
        (
            "reexamine-muon",
            {"explained_if": {"torch-muon": [], "momentum": ["muon-stalls"]}},
            "explained_if.torch-muon is empty",
        ),
        ("reexamine-polyak", {"confirmation_seeds": -1}, "confirmation_seeds"),
        ("reexamine-polyak", {"confirmation_first": 2000}, "confirmation_first"),
        # an earlier look ends before the next begins, on seeds above the confirmation base
        (
            "reexamine-polyak",
            {"earlier_confirmations": [[2050, 100]]},
            r"earlier_confirmations\[0\]",
        ),
        ("reexamine-polyak", {"earlier_confirmations": [[2000, 5]]}, "earlier_confirmations"),
        ("reexamine-polyak", {"earlier_confirmations": [[2001, 0]]}, "earlier_confirmations"),
        ("reexamine-polyak", {"caps": [1e2, float("nan")]}, r"caps\[1\]"),
        ("reexamine-polyak", {"caps": [1e2, "infinite"]}, r"caps\[1\]"),
        ("reexamine-polyak", {"caps": [1e6, 1e6]}, "at least two caps"),
        ("reexamine-polyak", {"uncapped": 1e300}, "uncapped"),
    ],
)
def test_bad_reexamination_configs_are_refused(name, overrides, message):
    with pytest.raises(ValueError, match=message):
        load_config(name, quick=True, overrides=overrides)


def test_polyak_sweep_runs_every_cap_from_c_1():
    config = load_config("reexamine-polyak", quick=True)
    polyak = [a for a in config.algorithms if a.optimizer == "polyak"]
    assert len(polyak) == len(config.caps) == 4
    assert [(a.lr, a.c) for a in polyak] == [(g, 1.0) for g in config.caps]
    assert config.algorithms[0].name == "NGD" and all(a.f_star == "optimal" for a in polyak)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_reexamination_claim_is_in_the_register(name, tmp_path):
    tiny = {"seeds": 2, "steps": 60}
    summary = run_experiment(load_config(name, quick=True, overrides=tiny), tmp_path)
    ids = [c["id"] for c in summary["claims"]]
    assert len(ids) == len(set(ids)) and all(i.startswith(f"{name}/") for i in ids)
    assert unregistered({name: summary}) == []
    assert any(p.endswith(".png") for p in summary["figures"])


@pytest.mark.slow
def test_muon_style_momentum_is_made_of_old_gradients():
    """docs/theory.md#reexamine: on the atlas's problem the float64 Muon-style method's
    gradient shrinks faster per step than β = 0.95, so its momentum buffer is dominated by
    gradients more than 100 steps old: the step keeps an early direction. Written out here
    (m ← β m + g, W ← W − η · NS(m)), independent of the engine."""
    problem, beta, lr, steps = gaussian_unit(6, 8, 10, seed=2), 0.95, 0.2, 1500
    X, z, y, _ = problem.tensors()
    v = torch.as_tensor(problem.v)
    W = torch.as_tensor(0.01 * np.random.default_rng(2).standard_normal((10, 10)))
    m, norms = torch.zeros_like(W), []
    for _ in range(steps):
        _, grad, _ = risk_and_gradients(W, v, X, z, y)
        m = beta * m + grad
        norms.append(float(torch.linalg.matrix_norm(grad)))
        W = W - lr * spectral_direction(m[None], "newton-schulz")[0]
    norms = np.array(norms)
    assert (norms[-1] / norms[steps // 2]) ** (1 / (steps - 1 - steps // 2)) < beta
    weight = beta ** np.arange(steps - 1, -1, -1) * norms  # each gradient's share of ‖m‖'s sum
    assert weight[:-100].sum() / weight.sum() > 0.99


def test_a_longer_arm_runs_its_multiple_of_the_steps_untuned():
    """reexamine-muon's Muon-long (issue 29): torch's Muon over `longer` × `steps` at its
    config η, on the evaluation seeds only; every other arm's runs keep `steps` (and their
    stored keys)."""
    from attnbias.experiments import reexamine_muon

    config = load_config("reexamine-muon", quick=True)
    specs = reexamine_muon.specs(config)
    steps = {(s.algorithm.name, s.steps) for s in specs}
    longer = {"Muon-long", "Muon-f64-Nesterov-long"}  # and its float64 comparator
    assert {n for n, k in steps if k == 10 * config.steps} == longer
    assert {n for n, k in steps if k == config.steps} == {
        a.name for a in config.algorithms if a.name not in longer
    }
    assert [s.key for s in specs if s.algorithm.name not in longer] == [
        s.key for s in atlas.specs(config) if s.algorithm.name not in longer
    ]
    assert config.steps_note("Muon-long") == f", {10 * config.steps:,} steps"
    assert config.steps_note("Muon") == ""
