"""The optimisers stay right where the numbers get hard: tiny and huge gradients, NaN, edits to
the weights between steps, and agreement with the batched engine over long runs."""

import copy

import numpy as np
import pytest
import torch

from attnbias.data import example1, gaussian_unit
from attnbias.engine import Algorithm, RunBatch, RunSpec, simulate, update
from attnbias.engine.single_run import run_reference
from attnbias.losses import risk
from attnbias.model import AttentionClassifier, risk_and_gradients
from attnbias.optim import MirrorDescent, NormalizedGD, PolyakStep

pytestmark = pytest.mark.usefixtures("one_thread")


def train(make, problem, steps, seed=1):
    """Yield (W before, gradient, W after) for each step of a model trained by make(params)."""
    X, z, y, v = problem.tensors()
    model = AttentionClassifier(
        X.shape[-1], v=v, init_scale=1.0, generator=torch.Generator().manual_seed(seed)
    )
    opt = make(model.parameters())
    for _ in range(steps):
        before = model.W.detach().clone()
        opt.zero_grad()
        loss = risk(y * model(X, z), "logistic")
        loss.backward()
        opt.step(lambda loss=loss: loss)
        yield before, model.W.grad.detach(), model.W.detach()


# name: (optimiser, data, steps with a nonzero float64 gradient that the run must reach: past
# where eac3930 froze, and for ℓ3 the whole run; later the autograd gradient is subnormal and, at
# a step that rounding decides, exactly zero)
MOVING = {
    "MD-1.75": (
        lambda ps: MirrorDescent(ps, lr=0.1, p=1.75, normalize="per_tensor"),
        "gaussian",
        5000,
    ),
    "MD-3": (
        lambda ps: MirrorDescent(ps, lr=0.1, p=3.0, normalize="per_tensor"),
        "gaussian",
        20_000,
    ),
    "MD-1.1": (lambda ps: MirrorDescent(ps, lr=0.1, p=1.1, normalize="per_tensor"), "gaussian", 80),
    "NGD": (lambda ps: NormalizedGD(ps, lr=0.1), "example1", 10_000),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MOVING))
def test_normalized_methods_move_at_every_step_with_a_nonzero_gradient(name):
    """20,000 steps: W changes at every step whose gradient has a nonzero entry (on main
    eac3930 ℓ1.1 froze at step 38, ℓ1.75 at 3,065 and NGD at 6,839 with nonzero gradients:
    their norms underflowed). Where float64's gradient is exactly zero (every non-selected
    attention score has underflowed to 0), no method fed by autograd can move."""
    make, data, floor = MOVING[name]
    problem = gaussian_unit(6, 8, 10, seed=1) if data == "gaussian" else example1(seed=0)
    nonzero_steps = 0
    for t, (before, grad, after) in enumerate(train(make, problem, 20_000)):
        if not bool((grad != 0).any()):
            break
        nonzero_steps += 1
        assert not torch.equal(before, after), f"{name} froze at step {t} with a nonzero gradient"
        assert bool(torch.isfinite(after).all())
    assert nonzero_steps >= floor


def test_float32_tensor_with_tiny_gradient_moves():
    """ℓ1.1-MD normalizes by ‖g‖₁₁: with float32 entries of 1e-7 their 11th powers are 0, and
    on eac3930 the tensor never moved."""
    for opt_class, kwargs in [
        (MirrorDescent, dict(p=1.1, normalize="per_tensor")),
        (MirrorDescent, dict(p=1.1, normalize="global")),
        (NormalizedGD, {}),
    ]:
        w = torch.nn.Parameter(torch.ones(300, dtype=torch.float32))
        opt = opt_class([w], lr=0.01, **kwargs)
        w.grad = torch.full_like(w, 1e-7)
        opt.step()
        assert bool((w < 1).all()), opt_class.__name__


@pytest.mark.parametrize("lr", [10.0, 1e10])
@pytest.mark.parametrize("grad", [[3e-308, -1e-308, 0.0, 2e-308], [5e-324, 0.0, 0.0, 0.0]])
def test_huge_step_sizes_and_tiny_gradients_stay_finite(lr, grad):
    """Steps are η·(g/D) with |g/D| ≤ 1: no D/η that underflows to 0 (on eac3930 the engine's
    lr = 10 runs turned NaN once ‖g‖ reached the smallest subnormal number)."""
    for opt_class, kwargs in [
        (MirrorDescent, dict(p=3.0, normalize="per_tensor")),
        (NormalizedGD, {}),
    ]:
        w = torch.nn.Parameter(torch.zeros(4))
        opt = opt_class([w], lr=lr, **kwargs)
        w.grad = torch.tensor(grad)
        opt.step()
        assert bool(torch.isfinite(w).all()) and float(w.detach().abs().max()) > 0


def clamp_then_zero_step(opt_class, **kwargs):
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(5, 5))
    opt = opt_class([w], lr=0.1, **kwargs)
    w.grad = torch.randn(5, 5)
    opt.step()
    return w, opt


def clamp_in_place(w: torch.Tensor, form: str, low: float, high: float) -> None:
    """The two ways to project a parameter in place: through `.data` (the WGAN clipping idiom,
    unseen by torch's version counter) and under no_grad (seen by it)."""
    if form == "data":
        w.data.clamp_(low, high)
    else:
        with torch.no_grad():
            w.clamp_(low, high)


@pytest.mark.parametrize("form", ["data", "no_grad"])
@pytest.mark.parametrize("p", [1.5, 3.0])
def test_an_in_place_edit_between_steps_is_kept(p, form):
    """A projection in place (w.data.clamp_, or clamp_ under no_grad) then a zero-gradient
    step: on eac3930 MirrorDescent restored the unclamped weights from its cached dual
    iterate; torch.optim.SGD keeps the edit, and so must we, whichever way it was made."""
    w, opt = clamp_then_zero_step(MirrorDescent, p=p)
    clamp_in_place(w, form, -0.5, 0.5)
    clamped = w.detach().clone()
    assert not torch.equal(clamped, opt.state[w]["weight"])  # the clamp changed something
    w.grad = torch.zeros_like(w)
    opt.step()
    torch.testing.assert_close(w.detach(), clamped, rtol=1e-15, atol=0)


def mirror_15(w: torch.Tensor) -> torch.Tensor:
    """∇ψ at p = 1.5, sign(w)|w|^{1/2}."""
    return w.sign() * w.abs() ** 0.5


def inverse_mirror_15(theta: torch.Tensor) -> torch.Tensor:
    """(∇ψ)⁻¹ at p = 1.5, sign(θ)θ²."""
    return theta.sign() * theta.abs() ** 2


@pytest.mark.parametrize("edit", ["mul", "clamp"])
def test_a_data_edit_between_steps_restarts_the_edited_entries_from_the_edited_weights(edit):
    """w.data.mul_(0.5) or w.data.clamp_ between two ℓ1.5-MD steps, by hand: the entries the
    edit changed step from θ = ∇ψ(w) of their edited value (what a fresh optimiser would
    start from), the others from the θ carried by the first step."""
    grads = [torch.randn(6, 5, generator=torch.Generator().manual_seed(s)) for s in (1, 2)]
    w = torch.nn.Parameter(torch.randn(6, 5, generator=torch.Generator().manual_seed(0)))
    opt = MirrorDescent([w], lr=0.1, p=1.5)
    theta = mirror_15(w.detach()) - 0.1 * grads[0]
    w.grad = grads[0]
    opt.step()
    before = w.detach().clone()
    torch.testing.assert_close(before, inverse_mirror_15(theta), rtol=1e-14, atol=0)
    if edit == "mul":
        w.data.mul_(0.5)
    else:
        w.data.clamp_(-0.3, 0.3)
    edited = w.detach().clone()
    changed = edited != before
    if edit == "mul":
        assert bool(changed.all())
    else:  # some entries clamped, some not: both rules are tested
        assert 0 < int(changed.sum()) < changed.numel()
    theta = torch.where(changed, mirror_15(edited), theta) - 0.1 * grads[1]
    w.grad = grads[1]
    opt.step()
    torch.testing.assert_close(w.detach(), inverse_mirror_15(theta), rtol=1e-14, atol=0)
    # the step that would undo the edit (continuing from the stale θ) is far from this one
    stale = inverse_mirror_15(mirror_15(before) - 0.1 * grads[1])
    assert float((w.detach() - stale)[changed].abs().max()) > 0.01


@pytest.mark.parametrize("p", [1.5, 3.0])
def test_data_assignment_and_load_state_dict_edits_are_kept(p):
    w, opt = clamp_then_zero_step(MirrorDescent, p=p)
    w.data = torch.full((5, 5), 0.25)
    w.grad = torch.zeros_like(w)
    opt.step()
    torch.testing.assert_close(w.detach(), torch.full((5, 5), 0.25), rtol=1e-15, atol=0)

    w2, opt2 = clamp_then_zero_step(MirrorDescent, p=p)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    with torch.no_grad():
        w2.mul_(0.5)  # an edit after loading the state
    edited = w2.detach().clone()
    w2.grad = torch.zeros_like(w2)
    opt2.step()
    torch.testing.assert_close(w2.detach(), edited, rtol=1e-15, atol=0)


def test_unedited_weights_keep_the_exact_dual_iterate():
    """Without edits θ is carried exactly: two steps of ℓ3-MD by hand."""
    w = torch.nn.Parameter(torch.tensor([0.5, -2.0, 0.0]))
    opt = MirrorDescent([w], lr=0.1, p=3.0)
    theta = torch.sign(w.detach()) * w.detach().abs() ** 2
    for g in ([1.0, -1.0, 0.5], [0.2, 0.3, -0.4]):
        w.grad = torch.tensor(g)
        opt.step()
        theta = theta - 0.1 * torch.tensor(g)
        torch.testing.assert_close(
            w.detach(), torch.sign(theta) * theta.abs() ** 0.5, rtol=1e-15, atol=0
        )


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: NormalizedGD(ps, lr=0.1),
        lambda ps: NormalizedGD(ps, lr=0.1, momentum=0.5, normalize="per_tensor"),
        lambda ps: MirrorDescent(ps, lr=0.1, p=1.75, normalize="per_tensor"),
        lambda ps: MirrorDescent(ps, lr=0.1, p=3.0, normalize="global"),
        lambda ps: PolyakStep(ps, lr=1.0),
    ],
)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_nonfinite_gradient_is_an_error_naming_the_parameter(make, bad):
    """On eac3930 NGD and normalized MD silently skipped such a step."""
    a = torch.nn.Parameter(torch.ones(3))
    b = torch.nn.Parameter(torch.ones(2, 2))
    opt = make([a, b])
    a.grad = torch.ones(3)
    b.grad = torch.tensor([[1.0, bad], [0.0, 1.0]])
    with pytest.raises(FloatingPointError, match=r"parameter 1 .*shape \(2, 2\)"):
        opt.step(lambda: torch.tensor(1.0))
    assert torch.equal(a.detach(), torch.ones(3)) and bool(torch.isfinite(b).all())


def test_polyak_nonfinite_loss_is_an_error():
    w = torch.nn.Parameter(torch.ones(3))
    opt = PolyakStep([w], lr=1.0)
    w.grad = torch.ones(3)
    with pytest.raises(FloatingPointError, match="the loss"):
        opt.step(lambda: torch.tensor(float("nan")))


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda ps: MirrorDescent(ps, lr=True), TypeError, "lr must be a real number"),
        (lambda ps: MirrorDescent(ps, lr=0.1, p="3"), TypeError, "p must be a real number"),
        (lambda ps: MirrorDescent(ps, lr=float("nan")), ValueError, "lr must be finite"),
        (lambda ps: NormalizedGD(ps, lr=0.1, momentum=True), TypeError, "momentum must be"),
        (lambda ps: PolyakStep(ps, lr=1.0, f_star=float("nan")), ValueError, "f_star"),
        (lambda ps: PolyakStep(ps, lr=1.0, c="1"), TypeError, "c must be a real number"),
    ],
)
def test_wrong_types_and_values_are_refused(make, error, match):
    with pytest.raises(error, match=match):
        make([torch.nn.Parameter(torch.ones(2))])


def test_tensor_learning_rate_is_accepted_and_equals_the_float():
    ws = [torch.nn.Parameter(torch.tensor([1.0, -2.0])) for _ in range(2)]
    opts = [MirrorDescent([ws[0]], lr=torch.tensor(0.1), p=3.0, normalize="per_tensor")]
    opts.append(MirrorDescent([ws[1]], lr=0.1, p=3.0, normalize="per_tensor"))
    for w, opt in zip(ws, opts):
        w.grad = torch.tensor([0.3, 0.4])
        opt.step()
    torch.testing.assert_close(ws[0].detach(), ws[1].detach(), rtol=1e-15, atol=0)


# name: (algorithm, data, steps)
AGREE = {
    "NGD": (Algorithm("NGD", "ngd", 0.1), "example1", 10_000),
    "NGD-mom": (Algorithm("NGD-mom", "ngd", 0.1, momentum=0.9), "example1", 10_000),
    "MD-1.75": (
        Algorithm("MD-1.75", "md", 0.1, p=1.75, normalize="per_tensor"),
        "gaussian",
        10_000,
    ),
    "MD-3": (Algorithm("MD-3", "md", 0.1, p=3.0, normalize="per_tensor"), "gaussian", 10_000),
    "Polyak": (Algorithm("Polyak", "polyak", 10.0, f_star="optimal"), "example1", 10_000),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(AGREE))
def test_engine_and_optimizer_agree_over_long_runs(name):
    """The batched engine (closed-form gradients, per-run hyper-parameters) and the
    attnbias.optim class on an autograd model: relative difference ≤ 1e-10 at every recorded
    step while the gradient is a normal float64 number (on eac3930 they parted once the
    optimiser's norm underflowed: ‖W‖ 750 vs 686). Once the largest gradient entry is
    subnormal (below ~1e-290 here), each computation carries only a few digits and the two
    part: that window is reported, not compared."""
    algorithm, data, steps = AGREE[name]
    problem = gaussian_unit(6, 8, 10, seed=1) if data == "gaussian" else example1(seed=0)
    W0 = np.random.default_rng(1).standard_normal((problem.X.shape[-1],) * 2)
    grid = np.concatenate([[0], np.unique(np.geomspace(1, steps, 40).astype(int))])
    spec = RunSpec({}, problem, algorithm, steps, {"W": W0})
    engine = {}
    simulate(RunBatch.from_specs([spec]), grid, lambda done: engine.update(done.snapshots))
    reference = run_reference(spec, grid)["W"]
    X, z, y, v = problem.tensors()
    largest = np.array(
        [
            float(risk_and_gradients(torch.as_tensor(W), v, X, z, y)[1].abs().max())
            for W in reference
        ]
    )
    normal = np.cumprod(largest >= 1e-290).astype(bool)
    W = engine["W"][0].numpy()[normal]
    error = np.abs(W - reference[normal]).max(axis=(1, 2)) / np.abs(reference[normal]).max(
        axis=(1, 2)
    )
    assert error.max() <= 1e-10, (name, error.max(), int(grid[normal][error.argmax()]))
    assert grid[normal][-1] >= 1000, f"only {grid[normal][-1]} steps had a normal gradient"
    assert np.abs(reference[-1] - reference[len(grid) // 2]).max() > 0, "the run never moved"


def test_engine_and_optimizer_take_the_same_l11_steps():
    """ℓ1.1-MD amplifies rounding: the closed-form and autograd gradients differ in the last
    bit, and the two trajectories part by ~1.7× per step (1e-15 at step 5, 1e-9 at step 45;
    then the gradient underflows). So the two are compared step by step: from each iterate of
    the optimiser's run, one engine step lands on the optimiser's next iterate."""
    problem = gaussian_unit(6, 8, 10, seed=1)
    W0 = np.random.default_rng(1).standard_normal((10, 10))
    algorithm = Algorithm("MD-1.1", "md", 0.1, p=1.1, normalize="per_tensor")
    steps = 80
    reference = run_reference(
        RunSpec({}, problem, algorithm, steps, {"W": W0}), np.arange(steps + 1)
    )["W"]
    specs = [RunSpec({"t": t}, problem, algorithm, 1, {"W": reference[t]}) for t in range(steps)]
    finals = {}
    simulate(
        RunBatch.from_specs(specs),
        np.array([0, 1]),
        lambda done: finals.update(zip(done.index.tolist(), done.final["W"])),
    )
    X, z, y, v = problem.tensors()
    compared = 0
    for t in range(steps):
        grad = risk_and_gradients(torch.as_tensor(reference[t]), v, X, z, y)[1]
        if float(grad.abs().max()) < 1e-290:  # subnormal: autograd's step has few digits
            break
        error = np.abs(finals[t] - reference[t + 1]).max() / np.abs(reference[t + 1]).max()
        assert error <= 1e-12, (t, error)
        compared += 1
    assert compared >= 70


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MOVING))
def test_the_engine_keeps_moving_for_20000_steps(name):
    """The engine forms gradients in log scale: its normalised steps keep their direction
    where float64's gradient has underflowed (ℓ1.1 after ~85 steps, NGD on example1 after
    ~14,000), so W changes at every one of 20,000 steps, and stays finite."""
    algorithm = {
        "MD-1.75": Algorithm("MD-1.75", "md", 0.1, p=1.75, normalize="per_tensor"),
        "MD-3": Algorithm("MD-3", "md", 0.1, p=3.0, normalize="per_tensor"),
        "MD-1.1": Algorithm("MD-1.1", "md", 0.1, p=1.1, normalize="per_tensor"),
        "NGD": Algorithm("NGD", "ngd", 0.1),
    }[name]
    data = MOVING[name][1]
    problem = gaussian_unit(6, 8, 10, seed=1) if data == "gaussian" else example1(seed=0)
    W0 = np.random.default_rng(1).standard_normal((problem.X.shape[-1],) * 2)
    batch = RunBatch.from_specs([RunSpec({}, problem, algorithm, 20_000, {"W": W0})])
    for t in range(20_000):
        before = batch.params[0].clone()
        loss, grads, scales, log_risk = batch.gradients()
        update.step(
            batch.params, batch.duals, grads, scales, batch.buffers, loss, batch.hyper,
            log_risk=log_risk,
        )  # fmt: skip
        assert not torch.equal(before, batch.params[0]), f"{name} froze at step {t}"
    assert bool(torch.isfinite(batch.params[0]).all())
