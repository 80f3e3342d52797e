import math

import pytest
import torch

from attnbias.model import AttentionClassifier
from attnbias.optim import MirrorDescent, NormalizedGD, PolyakStep
from conftest import random_problem


def _param(values):
    p = torch.nn.Parameter(torch.tensor(values, dtype=torch.float64))
    return p


def _train(make_optimizer, steps=15, seed=0, polyak=False):
    """A few steps on a small attention problem; returns the parameters after each step."""
    import numpy as np

    X, z, y, v = random_problem(np.random.default_rng(seed), n=6, T=4, d=3)
    g = torch.Generator().manual_seed(seed)
    model = AttentionClassifier(3, train_head=True, v=v, init_scale=0.5, generator=g)
    opt = make_optimizer(model.parameters())
    trace = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.softplus(-y * model(X, z)).mean()
        loss.backward()
        opt.step(lambda loss=loss: loss) if polyak else opt.step()
        trace.append([p.detach().clone() for p in model.parameters()])
    return trace


def _assert_same_trace(a, b, rtol=1e-13):
    for step_a, step_b in zip(a, b, strict=True):
        for pa, pb in zip(step_a, step_b, strict=True):
            torch.testing.assert_close(pa, pb, rtol=rtol, atol=1e-15)


def test_md_p2_plain_is_sgd():
    _assert_same_trace(
        _train(lambda ps: MirrorDescent(ps, lr=0.3, p=2.0)),
        _train(lambda ps: torch.optim.SGD(ps, lr=0.3)),
    )


@pytest.mark.parametrize("mode", ["per_tensor", "global"])
def test_md_p2_normalized_is_ngd(mode):
    _assert_same_trace(
        _train(lambda ps: MirrorDescent(ps, lr=0.1, p=2.0, normalize=mode)),
        _train(lambda ps: NormalizedGD(ps, lr=0.1, normalize=mode)),
    )


def test_md_step_by_hand_p3():
    # ∇ψ(w) = sign(w)|w|², θ = ∇ψ(w) − ηg, w⁺ = sign(θ)|θ|^{1/2}
    w = _param([1.0, -0.5, 0.0])
    w.grad = torch.tensor([0.2, -0.4, 0.3])
    MirrorDescent([w], lr=0.5, p=3.0).step()
    expected = [math.sqrt(0.9), -math.sqrt(0.05), -math.sqrt(0.15)]
    torch.testing.assert_close(w.detach(), torch.tensor(expected), rtol=1e-14, atol=0)


def test_md_step_by_hand_p175_normalized():
    # q = 1.75/0.75 = 7/3; g/‖g‖_q; ∇ψ(w) = sign(w)|w|^0.75; w⁺ = sign(θ)|θ|^{4/3}
    w = _param([1.0, -0.5])
    g = [0.2, -0.4]
    w.grad = torch.tensor(g)
    MirrorDescent([w], lr=0.5, p=1.75, normalize="per_tensor").step()
    q = 7.0 / 3.0
    gq = (abs(g[0]) ** q + abs(g[1]) ** q) ** (1 / q)
    theta = [1.0 - 0.5 * g[0] / gq, -(0.5**0.75) - 0.5 * g[1] / gq]
    expected = [math.copysign(abs(t) ** (4.0 / 3.0), t) for t in theta]
    torch.testing.assert_close(w.detach(), torch.tensor(expected), rtol=1e-14, atol=0)


def test_ngd_momentum_by_hand():
    w = _param([1.0, 2.0])
    opt = NormalizedGD([w], lr=0.1, momentum=0.5)
    w.grad = torch.tensor([3.0, 4.0])
    opt.step()  # m = (0.6, 0.8)
    w.grad = torch.tensor([0.0, -2.0])
    opt.step()  # m = 0.5·(0.6, 0.8) + (0, −1) = (0.3, −0.6)
    expected = torch.tensor([1.0 - 0.06 - 0.03, 2.0 - 0.08 + 0.06])
    torch.testing.assert_close(w.detach(), expected, rtol=1e-14, atol=0)


def test_ngd_per_tensor_vs_global():
    a, b = _param([3.0, 4.0]), _param([1.0])
    a.grad, b.grad = torch.tensor([3.0, 4.0]), torch.tensor([12.0])
    NormalizedGD([a, b], lr=1.0, normalize="global").step()  # ‖g‖ = 13
    torch.testing.assert_close(b.detach(), torch.tensor([1.0 - 12 / 13]))
    a, b = _param([3.0, 4.0]), _param([1.0])
    a.grad, b.grad = torch.tensor([3.0, 4.0]), torch.tensor([12.0])
    NormalizedGD([a, b], lr=1.0, normalize="per_tensor").step()
    torch.testing.assert_close(a.detach(), torch.tensor([2.4, 3.2]))
    torch.testing.assert_close(b.detach(), torch.tensor([0.0]))


@pytest.mark.parametrize(
    "loss, f_star, cap, eta",
    [(2.0, 0.5, 10.0, 1.5 / (2 * 25)), (2.0, 0.5, 0.01, 0.01), (0.4, 0.5, 1.0, 0.0)],
)
def test_polyak_step_by_hand(loss, f_star, cap, eta):
    w = _param([1.0, 1.0])
    w.grad = torch.tensor([3.0, 4.0])
    opt = PolyakStep([w], lr=cap, f_star=f_star, c=2.0)
    assert opt.step(lambda: torch.tensor(loss)).item() == loss
    torch.testing.assert_close(w.detach(), torch.tensor([1 - 3 * eta, 1 - 4 * eta]))
    assert opt.param_groups[0]["step_size"] == pytest.approx(eta)


def test_polyak_needs_closure():
    w = _param([1.0])
    w.grad = torch.tensor([1.0])
    with pytest.raises(ValueError, match="closure"):
        PolyakStep([w], lr=1.0).step()


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: MirrorDescent(ps, lr=0.1, p=1.75, normalize="per_tensor"),
        lambda ps: MirrorDescent(ps, lr=0.1, p=3.0, normalize="global"),
        lambda ps: NormalizedGD(ps, lr=0.1, momentum=0.9),
        lambda ps: PolyakStep(ps, lr=1.0),
    ],
)
def test_zero_gradient_and_missing_gradient(make):
    w, frozen = _param([0.0, 1.0, -2.0]), _param([5.0])
    w.grad = torch.zeros(3)
    opt = make([w, frozen])
    opt.step(lambda: torch.tensor(1.0))
    assert torch.isfinite(w).all()
    torch.testing.assert_close(w.detach(), torch.tensor([0.0, 1.0, -2.0]))
    assert frozen.item() == 5.0 and len(opt.state[frozen]) == 0


@pytest.mark.parametrize(
    "make, polyak",
    [
        (lambda ps: NormalizedGD(ps, lr=0.05, momentum=0.8), False),
        (lambda ps: MirrorDescent(ps, lr=0.05, p=3.0, normalize="per_tensor"), False),
        (lambda ps: PolyakStep(ps, lr=0.5, f_star=0.01), True),
    ],
)
def test_state_dict_round_trip_resumes_exactly(make, polyak):
    import numpy as np

    X, z, y, v = random_problem(np.random.default_rng(1), n=6, T=4, d=3)

    def run(steps, resume_after=None):
        model = AttentionClassifier(
            3, v=v, init_scale=0.5, generator=torch.Generator().manual_seed(0)
        )
        opt = make(model.parameters())
        for t in range(steps):
            if t == resume_after:  # rebuild everything from the saved state
                saved = (model.state_dict(), opt.state_dict())
                model = AttentionClassifier(3, v=v)
                model.load_state_dict(saved[0])
                opt = make(model.parameters())
                opt.load_state_dict(saved[1])
            opt.zero_grad()
            loss = torch.nn.functional.softplus(-y * model(X, z)).mean()
            loss.backward()
            opt.step(lambda loss=loss: loss) if polyak else opt.step()
        return model.W.detach()

    torch.testing.assert_close(run(10, resume_after=4), run(10), rtol=0, atol=0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda ps: MirrorDescent(ps, lr=0.1, p=1.0), "p must be > 1"),
        (lambda ps: MirrorDescent(ps, lr=0.1, p=0.5), "p must be"),
        (lambda ps: MirrorDescent(ps, lr=-1.0), "lr must be > 0"),
        (lambda ps: MirrorDescent(ps, lr=0.1, normalize="l2"), "normalize must be"),
        (lambda ps: NormalizedGD(ps, lr=0.1, momentum=1.0), "momentum must be < 1"),
        (lambda ps: NormalizedGD(ps, lr=0.1, normalize="layer"), "normalize must be"),
        (lambda ps: NormalizedGD(ps, lr=0.1, normalize=False), "normalize must be True"),
        (lambda ps: PolyakStep(ps, lr=0.0), "lr must be"),
        (lambda ps: PolyakStep(ps, lr=1.0, c=0), "c must be"),
    ],
)
def test_bad_arguments_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make([_param([1.0])])


def test_param_groups_with_their_own_p():
    a, b = _param([1.0, -0.5]), _param([1.0, -0.5])
    a.grad = b.grad = torch.tensor([0.2, -0.4])
    MirrorDescent([{"params": [a], "p": 3.0}, {"params": [b]}], lr=0.5).step()
    torch.testing.assert_close(a.detach(), torch.tensor([math.sqrt(0.9), -math.sqrt(0.05)]))
    torch.testing.assert_close(b.detach(), torch.tensor([0.9, -0.3]))


def test_md_notices_parameters_changed_outside_the_optimizer():
    """The dual iterate is cached; an in-place change of w (e.g. loading weights) must reset it."""
    w = _param([1.0, -0.5])
    opt = MirrorDescent([w], lr=0.5, p=3.0)
    w.grad = torch.tensor([0.2, -0.4])
    opt.step()
    with torch.no_grad():
        w.copy_(torch.tensor([2.0, 0.25]))
    w.grad = torch.tensor([0.1, 0.1])
    opt.step()
    theta = [4.0 - 0.05, 0.0625 - 0.05]
    torch.testing.assert_close(w.detach(), torch.tensor([math.sqrt(t) for t in theta]))
