"""Normalized steepest descent (SignGD, SpectralDescent, SteepestDescent): hand-computed steps,
the special cases p = 2 (NGD) and p = ∞ (SignGD), and the engine (with torch's Adam and Muon)
equal to the optimisers step for step."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from attnbias.data import gaussian_unit
from attnbias.engine import Algorithm, RunBatch, RunSpec, simulate
from attnbias.engine.single_run import run_reference
from attnbias.optim import NormalizedGD, SignGD, SpectralDescent, SteepestDescent, registry
from attnbias.optim.steepest import spectral_direction

pytestmark = pytest.mark.usefixtures("one_thread")


def steps(optimizer_class, w0, grads, **kwargs):
    """The iterates after applying `grads` one by one from w0."""
    w = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    optimizer = optimizer_class([w], **kwargs)
    out = []
    for g in grads:
        w.grad = torch.tensor(g, dtype=torch.float64)
        optimizer.step()
        out.append(w.detach().clone())
    return out


def test_sign_gd_hand_computed_with_momentum():
    # m1 = g1 = (2, -3, 0): W1 = W0 - 0.5 sign(m1); m2 = 0.5 m1 + g2 = (1, -1.5, 0) + (-4, 1, 1).
    w = steps(SignGD, [1.0, 1.0, 1.0], [[2, -3, 0], [-4, 1, 1]], lr=0.5, momentum=0.5)
    assert w[0].tolist() == [0.5, 1.5, 1.0]
    assert w[1].tolist() == [1.0, 2.0, 0.5]  # m2 = (-3, -0.5, 1)


def test_steepest_l_three_halves_hand_computed():
    # p = 3/2, q = 3: Δ = sign(g) g² / ‖g‖_3², ‖(3, 4, 5)‖_3 = 216^(1/3) = 6.
    (w,) = steps(SteepestDescent, [0.0, 0.0, 0.0], [[3, -4, 5]], lr=1.0, norm=1.5)
    expected = torch.tensor([-9, 16, -25], dtype=torch.float64) / 36
    torch.testing.assert_close(w, expected, rtol=1e-15, atol=0)
    # Δ is a unit vector of ℓ1.5 attaining the dual norm: ⟨g, Δ⟩ = ‖g‖_3.
    assert float((w.abs() ** 1.5).sum()) == pytest.approx(1.0, rel=1e-14)


def test_steepest_direction_is_scale_free():
    for scale in (1e-300, 1.0, 1e300):
        (w,) = steps(
            SteepestDescent, [0.0, 0.0, 0.0], [[3 * scale, -4 * scale, 5 * scale]], lr=1.0, norm=1.5
        )
        torch.testing.assert_close(w, torch.tensor([-9.0, 16, -25], dtype=torch.float64) / 36)


def test_spectral_descent_hand_computed():
    # Full rank: G = diag(3, -2) → U Vᵀ = diag(1, -1).
    (w,) = steps(SpectralDescent, [[0.0, 0.0], [0.0, 0.0]], [[[3, 0], [0, -2]]], lr=0.5)
    torch.testing.assert_close(w, torch.tensor([[-0.5, 0.0], [0.0, 0.5]], dtype=torch.float64))
    # Rank one: G = (0.6, 0.8)ᵀ(5, 0) → U Vᵀ = (0.6, 0.8)ᵀ(1, 0); the zero singular value's
    # arbitrary vectors must not enter.
    for method in ("svd", "newton-schulz"):
        (w,) = steps(
            SpectralDescent, [[0.0, 0.0], [0.0, 0.0]], [[[3, 0], [4, 0]]], lr=1.0, method=method
        )
        torch.testing.assert_close(
            w, torch.tensor([[-0.6, 0.0], [-0.8, 0.0]], dtype=torch.float64), rtol=0, atol=1e-14
        )


def test_spectral_momentum_uses_the_raw_gradient():
    # m2 = 0.5 diag(3, -2) + diag(-4, 0) = diag(-2.5, -1) → U Vᵀ = diag(-1, -1).
    w = steps(
        SpectralDescent,
        [[0.0, 0.0], [0.0, 0.0]],
        [[[3, 0], [0, -2]], [[-4, 0], [0, 0]]],
        lr=1.0,
        momentum=0.5,
    )
    torch.testing.assert_close(w[1], torch.tensor([[0.0, 0.0], [0.0, 2.0]], dtype=torch.float64))


def test_newton_schulz_close_to_svd_for_a_well_conditioned_matrix():
    rng = np.random.default_rng(0)
    Q1, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    Q2, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    G = Q1[:, :4] @ np.diag([5.0, 3.0, 2.0, 1.0]) @ Q2.T
    m = torch.as_tensor(G).unsqueeze(0)
    exact = torch.as_tensor(Q1[:, :4] @ Q2.T).unsqueeze(0)
    torch.testing.assert_close(spectral_direction(m, "svd"), exact, rtol=0, atol=1e-13)
    torch.testing.assert_close(spectral_direction(m, "newton-schulz"), exact, rtol=0, atol=1e-12)


def test_p_two_is_ngd_per_tensor_and_p_infinity_is_sign_gd():
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal((3, 4)) for _ in range(5)]
    w0 = rng.standard_normal((3, 4))
    ngd = steps(NormalizedGD, w0, grads, lr=0.3, norm="per_tensor")
    for a, b in zip(steps(SteepestDescent, w0, grads, lr=0.3, norm=2.0), ngd):
        assert torch.equal(a, b)
    sign = steps(SignGD, w0, grads, lr=0.3, momentum=0.4)
    for a, b in zip(steps(SteepestDescent, w0, grads, lr=0.3, norm=math.inf, momentum=0.4), sign):
        assert torch.equal(a, b)


def test_zero_gradient_takes_no_step():
    for cls, kw in [(SignGD, {}), (SpectralDescent, {}), (SteepestDescent, {"norm": 3.0})]:
        (w,) = steps(cls, [[1.0, 2.0]], [[[0.0, 0.0]]], lr=1.0, **kw)
        assert w.tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("cls", [SignGD, SpectralDescent, SteepestDescent])
def test_non_finite_gradient_raises_naming_the_parameter(cls, bad):
    a = torch.zeros(2, 2, dtype=torch.float64, requires_grad=True)
    b = torch.ones(2, 2, dtype=torch.float64, requires_grad=True)
    optimizer = cls([a, b], lr=0.1)
    a.grad = torch.ones(2, 2, dtype=torch.float64)
    b.grad = torch.tensor([[1.0, bad], [0.0, 1.0]], dtype=torch.float64)
    with pytest.raises(FloatingPointError, match=r"parameter 1 of group 0 \(shape \(2, 2\)\)"):
        optimizer.step()
    assert torch.equal(b, torch.ones(2, 2, dtype=torch.float64))


def test_bad_arguments_name_the_argument():
    w = torch.zeros(3, requires_grad=True)
    with pytest.raises(ValueError, match=r"parameter 0 of group 0 has shape \(3,\).*matrices"):
        SpectralDescent([w], lr=0.1)
    with pytest.raises(ValueError, match="method must be one of"):
        SpectralDescent([torch.zeros(2, 2, requires_grad=True)], lr=0.1, method="qr")
    with pytest.raises(ValueError, match="norm must be > 1"):
        SteepestDescent([w], lr=0.1, norm=1.0)
    with pytest.raises(TypeError, match="norm must be"):
        SteepestDescent([w], lr=0.1, norm="inf")
    with pytest.raises(ValueError, match="lr must be > 0"):
        SignGD([w], lr=0.0)
    with pytest.raises(ValueError, match="momentum must be"):
        SignGD([w], lr=0.1, momentum=1.0)


ALGORITHMS = [
    Algorithm("Sign", "sign", 0.05),
    Algorithm("Sign-mom", "sign", 0.05, momentum=0.9),
    Algorithm("Spectral", "spectral", 0.1),
    Algorithm("Spectral-mom", "spectral", 0.1, momentum=0.5),
    Algorithm("Spectral-NS", "spectral", 0.1, method="newton-schulz"),
    Algorithm("Steepest-1.5", "steepest", 0.1, norm=1.5),
    Algorithm("Steepest-3-mom", "steepest", 0.1, norm=3.0, momentum=0.5),
    Algorithm("Steepest-inf", "steepest", 0.1, norm=math.inf),
    Algorithm("Adam", "adam", 0.01, options={"eps": 1e-12}),
    Algorithm("Muon", "muon", 0.05, options={"weight_decay": 0.0}),
    Algorithm("Muon-plain", "muon", 0.05, options={"weight_decay": 0.0, "nesterov": False}),
]


def test_engine_equals_the_optimisers_step_for_step():
    """Every new algorithm, batched with the others of its family (runs of different lengths,
    so that finished runs leave the batch mid-way), matches its own optimiser on an
    AttentionClassifier (autograd) at every step to 1e-12."""
    rng = np.random.default_rng(2)
    specs = [
        RunSpec(
            {"i": i},
            gaussian_unit(4, 5, 6, seed=i),
            a,
            20 + 3 * (i % 3),
            {"W": rng.standard_normal((6, 6))},
        )
        for i, a in enumerate(ALGORITHMS)
    ]
    grid = np.arange(27)
    out = {}

    def keep(done):
        for j, i in enumerate(done.index):
            out[int(i)] = done.snapshots["W"][j].numpy()

    families = {}
    for i, s in enumerate(specs):
        families.setdefault(s.structure, []).append(i)
    assert len(families) == 4  # steepest (SVD), steepest (Newton–Schulz), adam, torch
    for index in families.values():
        simulate(RunBatch.from_specs([specs[i] for i in index], index=index), grid, keep)
    for i, spec in enumerate(specs):
        reference = run_reference(spec, grid[: spec.steps + 1])["W"]
        assert np.abs(reference[-1] - reference[0]).max() > 0.1, spec.algorithm.name  # moved
        np.testing.assert_allclose(
            out[i], reference, rtol=0, atol=1e-12, err_msg=spec.algorithm.name
        )


def share_tensors(monkeypatch, names) -> None:
    """Let only the named torch rules' runs share one tensor (`UpdateRule.elementwise`)."""
    for name, rule in list(registry.RULES.items()):
        if rule.elementwise or name in names:
            monkeypatch.setitem(registry.RULES, name, replace(rule, elementwise=name in names))


# (Adam is stepped by the engine's own AdamRuns: tests/test_adam.py)
ELEMENTWISE_RUNS = [
    Algorithm("SGD-wd", "sgd", 0.5, options={"momentum": 0.5, "weight_decay": 0.01}),
    Algorithm("SGD", "sgd", 0.5),
    Algorithm("SGD-mom", "sgd", 0.05, options={"momentum": 0.9, "nesterov": True}),
    Algorithm("Muon", "muon", 0.05, options={"weight_decay": 0.0}),
]


@pytest.mark.parametrize("side_by_side", [True, False], ids=["side-by-side", "interleaved"])
def test_runs_sharing_one_tensor_are_stepped_as_each_run_alone(monkeypatch, side_by_side):
    """The runs of an elementwise torch optimiser that lie side by side in a batch share one
    slice of it: their trajectories are those of one tensor per run bit for bit, as runs of
    different lengths leave (their state split, then joined again); interleaved runs keep one
    tensor each."""
    rng = np.random.default_rng(3)
    order = sorted(range(12), key=lambda i: i % 4) if side_by_side else list(range(12))
    specs = [
        RunSpec({"i": i}, gaussian_unit(4, 5, 6, seed=i), ELEMENTWISE_RUNS[i % 4],
                10 + 3 * (i % 3) + i // 4, {"W": rng.standard_normal((6, 6))})
        for i in order
    ]  # fmt: skip

    def trained():
        out = {}

        def keep(done):
            for j, i in enumerate(done.index):
                out[int(i)] = done.snapshots["W"][j].numpy()

        batch = RunBatch.from_specs(specs)
        simulate(batch, np.arange(max(s.steps for s in specs) + 1), keep)
        return out, [s is not None for s in batch.stepper.slices]

    shared, sliced = trained()
    assert sliced == ([True, True, True, False] if side_by_side else [False] * 4)
    share_tensors(monkeypatch, ())
    alone, sliced = trained()
    assert sliced == [False] * 4
    for i in range(len(specs)):
        assert np.abs(alone[i][-1] - alone[i][0]).max() > 0.01, i  # moved
        np.testing.assert_array_equal(shared[i], alone[i], err_msg=str(i))


def test_runs_that_stop_sharing_a_tensor_keep_their_own_state(monkeypatch):
    """Runs split from a shared slice into one tensor each (here: forced) each keep their own
    copy of what the slice's state held once for all: their steps are still those of runs
    never shared."""
    rng = np.random.default_rng(4)
    specs = [
        RunSpec({"i": i}, gaussian_unit(4, 5, 6, seed=i), ELEMENTWISE_RUNS[0], 12,
                {"W": rng.standard_normal((6, 6))})
        for i in range(3)
    ]  # fmt: skip

    def trained(shared_first: bool) -> torch.Tensor:
        share_tensors(monkeypatch, ("sgd",) if shared_first else ())
        batch = RunBatch.from_specs(specs)
        for _ in range(5):
            batch.step()
        share_tensors(monkeypatch, ())
        batch = batch.take(np.ones(3, dtype=bool))
        assert batch.stepper.slices == [None]
        for _ in range(5):
            batch.step()
        return batch.params[0]

    assert torch.equal(trained(True), trained(False))


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"name": "a", "optimizer": "sign", "lr": 0.1, "p": 3.0}, "p applies only to optimizer md"),
        ({"name": "a", "optimizer": "ngd", "lr": 0.1, "norm": 3.0}, "norm applies only to"),
        ({"name": "a", "optimizer": "steepest", "lr": 0.1, "norm": 1.0}, "norm must be > 1"),
        (
            {"name": "a", "optimizer": "spectral", "lr": 0.1, "method": "qr"},
            "method must be one of",
        ),
        (
            {"name": "a", "optimizer": "adam", "lr": 0.1, "options": {"epsilon": 1}},
            "options are not accepted",
        ),
        ({"name": "a", "optimizer": "adam", "lr": 0.1, "options": {"lr": 1}}, "options.lr"),
        (
            {"name": "a", "optimizer": "adam", "lr": 0.1, "options": {"betas": [0.9, 2.0]}},
            "options are not accepted",
        ),
        ({"name": "a", "optimizer": "sign", "lr": 0.1, "options": {}}, "options applies only"),
    ],
)
def test_new_algorithm_config_errors_name_the_field(spec, message):
    with pytest.raises(ValueError, match=message):
        Algorithm.from_dict(spec, "algorithms[0]")


def test_infinite_norm_survives_the_json_record():
    a = Algorithm("inf", "steepest", 0.1, norm=math.inf)
    assert a.to_dict()["norm"] == "inf"
    assert Algorithm.from_dict(a.to_dict()).norm == math.inf


def test_without_torch_muon_the_atlas_leaves_muon_out(monkeypatch, caplog):
    """torch < 2.9 has no torch.optim.Muon: the package still imports, the atlas drops the Muon
    runs (saying so), and building Muon says which torch it needs."""
    from attnbias.experiments import atlas

    muon = replace(registry.RULES["muon"], torch_class=None)  # as built on torch < 2.9
    monkeypatch.setitem(registry.RULES, "muon", muon)
    tables = [
        {"name": "Adam", "optimizer": "adam", "lr": 0.1},
        {"name": "Muon", "optimizer": "muon", "lr": 0.1},
    ]
    assert [t["name"] for t in atlas.runnable(tables)] == ["Adam"]
    assert "Muon left out" in caplog.text  # the atlas logs it (a warning)
    muon = Algorithm("Muon", "muon", 0.1)
    with pytest.raises(ValueError, match=r"needs torch.optim.Muon \(torch >= 2.9\)"):
        muon.torch_optimizer([torch.nn.Parameter(torch.zeros(2, 2))])
