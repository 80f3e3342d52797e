"""The momentum variants of the steepest-descent rules (issue 29, class 5): Nesterov's momentum
as torch.optim.SGD(nesterov=True) takes it, and momentum on the direction (NGD-mom's order)
beside momentum on the raw gradient (Muon's order). Checked against torch's SGD and formulas
written out here, in the engine as in a single run; the Algorithm fields are checked and keep
the keys of runs stored before them."""

import numpy as np
import pytest
import torch

from attnbias.data import gaussian_unit
from attnbias.engine import Algorithm, RunBatch, RunSpec, simulate
from attnbias.engine.single_run import run_reference
from attnbias.optim.steepest import spectral_direction, steepest_step_

pytestmark = pytest.mark.usefixtures("one_thread")


def gradients(seed: int, steps: int, shape=(1, 4, 3)) -> list[torch.Tensor]:
    rng = np.random.default_rng(seed)
    return [torch.as_tensor(rng.standard_normal(shape)) for _ in range(steps)]


def sgd_updates(grads, beta: float, nesterov: bool) -> list[torch.Tensor]:
    """The updates torch's SGD (lr = 1) takes for these gradients: its momentum, by torch."""
    w = torch.zeros_like(grads[0][0], requires_grad=True)
    sgd = torch.optim.SGD([w], lr=1.0, momentum=beta, nesterov=nesterov)
    out = []
    for g in grads:
        before = w.detach().clone()
        w.grad = g[0].clone()
        sgd.step()
        out.append(before - w.detach())
    return out


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_on_the_gradient_orthogonalises_what_torch_sgd_would_step(nesterov):
    grads, beta, lr = gradients(1, 6), 0.9, 0.3
    w, m = torch.zeros_like(grads[0]), [torch.zeros_like(grads[0])]
    for g, update in zip(grads, sgd_updates(grads, beta, nesterov)):
        expected = w - lr * spectral_direction(update[None], "svd")
        steepest_step_([w], [g], lr, kind="spectral", momentum=beta, buffers=m,
                       nesterov=nesterov)  # fmt: skip
        torch.testing.assert_close(w, expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_on_the_direction_is_torch_sgd_on_the_directions(nesterov):
    """u = Δ(g), then torch's SGD with momentum on u: NGD-mom's order, not normalised again."""
    grads, beta, lr = gradients(2, 6), 0.9, 0.3
    directions = [spectral_direction(g, "svd") for g in grads]
    w, m = torch.zeros_like(grads[0]), [torch.zeros_like(grads[0])]
    total = torch.zeros_like(grads[0][0])
    for g, update in zip(grads, sgd_updates(directions, beta, nesterov)):
        total += lr * update
        steepest_step_([w], [g], lr, kind="spectral", momentum=beta, buffers=m,
                       nesterov=nesterov, momentum_on="direction")  # fmt: skip
        torch.testing.assert_close(w[0], -total, rtol=0, atol=1e-13)
    # not normalised: late steps are longer than η in the spectral norm
    assert torch.linalg.matrix_norm(lr * update, 2) > 1.5 * lr


def test_the_orders_differ():
    grads = gradients(3, 5)
    ends = []
    for on in ("gradient", "direction"):
        w, m = torch.zeros_like(grads[0]), [torch.zeros_like(grads[0])]
        for g in grads:
            steepest_step_([w], [g], 0.1, kind="spectral", momentum=0.9, buffers=m,
                           momentum_on=on)  # fmt: skip
        ends.append(w)
    assert (ends[0] - ends[1]).abs().max() > 1e-2


VARIANTS = [
    {"momentum": 0.9},
    {"momentum": 0.9, "nesterov": True},
    {"momentum": 0.9, "momentum_on": "direction"},
    {"momentum": 0.9, "momentum_on": "direction", "nesterov": True},
]


@pytest.mark.parametrize("fields", VARIANTS)
def test_engine_steps_each_variant_as_a_single_run_does(fields):
    """The batched engine (runs of one variant in one batch) against the single run with the
    optimiser class, step for step, on the atlas's kind of problem."""
    algorithm = Algorithm("S", "spectral", 0.1, method="newton-schulz", **fields)
    grid = np.arange(31)
    specs = [
        RunSpec({"seed": s}, gaussian_unit(4, 5, 6, seed=s), algorithm, 30,
                {"W": 0.1 * np.random.default_rng(s).standard_normal((6, 6))})
        for s in (1, 2)
    ]  # fmt: skip
    batched = {}

    def keep(done):
        for j, i in enumerate(done.index):
            batched[int(i)] = done.snapshots["W"][j].numpy()

    simulate(RunBatch.from_specs(specs), grid, keep)
    for i, s in enumerate(specs):
        reference = run_reference(s, grid)["W"]
        np.testing.assert_allclose(batched[i], reference, rtol=0, atol=1e-12, err_msg=str(i))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"optimizer": "spectral", "momentum": 0.9, "nesterov": "yes"}, "nesterov must be true"),
        ({"optimizer": "spectral", "momentum": 0.9, "momentum_on": "m"}, "momentum_on must be"),
        ({"optimizer": "spectral", "nesterov": True}, "nesterov needs momentum > 0"),
        ({"optimizer": "sign", "momentum_on": "direction"}, "momentum_on needs momentum > 0"),
        ({"optimizer": "ngd", "momentum": 0.9, "nesterov": True}, "nesterov applies only to"),
    ],
)
def test_bad_momentum_fields_are_refused_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=message) as refused:
        Algorithm.from_dict({"name": "A", "lr": 0.1, **fields}, "algorithms[0]")
    assert str(refused.value).startswith("algorithms[0].")


def test_heavy_ball_on_the_gradient_keeps_its_old_key_and_variants_round_trip():
    plain = Algorithm("S", "spectral", 0.2, momentum=0.95, method="newton-schulz")
    assert set(plain.to_dict()) == {"name", "optimizer", "lr", "momentum", "method"}
    for fields in VARIANTS[1:]:
        variant = Algorithm("S", "spectral", 0.2, **fields)
        assert (
            Algorithm.from_dict(variant.to_dict())
            == variant
            != Algorithm("S", "spectral", 0.2, momentum=0.9)
        )
