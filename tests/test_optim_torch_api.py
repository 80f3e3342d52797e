"""The optimisers as torch.optim drop-ins: the standard keywords (weight_decay, maximize,
foreach, differentiable) against steps computed by hand in float64, one naming scheme, state
no larger than needed, checkpoints, schedulers, plain training loops, torch.compile and
reprs. (AttentionClassifier's dtype and repr: tests/test_model.py.)"""

from __future__ import annotations

import copy
import io
import math
import pickle
import warnings

import pytest
import torch

from attnbias.optim import (
    MirrorDescent,
    NormalizedGD,
    PolyakStep,
    SignGD,
    SpectralDescent,
    SteepestDescent,
)
from attnbias.optim.checked import use_foreach

W0 = [[0.8, -1.3], [0.4, 2.0]]
G = [[0.3, -0.4], [1.2, 0.5]]
LOSS = 2.5


def tensors():
    w = torch.nn.Parameter(torch.tensor(W0, dtype=torch.float64))
    w.grad = torch.tensor(G, dtype=torch.float64)
    return w, torch.tensor(W0, dtype=torch.float64), torch.tensor(G, dtype=torch.float64)


def one_step(make, **keywords):
    w, _, _ = tensors()
    make([w], **keywords).step(lambda: torch.tensor(LOSS, dtype=torch.float64))
    return w.detach()


def spectral(g):
    U, _, Vh = torch.linalg.svd(g)
    return U @ Vh


# class, its arguments, and the step by hand from (w, g, η): w⁺ = rule(shrink·w, g)
ETA, LAMBDA = 0.1, 0.5
HAND = {
    "MD-2": (MirrorDescent, dict(lr=ETA), lambda w, g: w - ETA * g),
    "MD-3": (
        MirrorDescent,
        dict(lr=ETA, p=3.0),
        lambda w, g: (lambda t: t.sign() * t.abs().sqrt())(w.sign() * w**2 - ETA * g),
    ),
    "MD-1.5-normalized": (
        MirrorDescent,
        dict(lr=ETA, p=1.5, normalize="global"),
        lambda w, g: (lambda t: t.sign() * t.abs() ** 2)(
            w.sign() * w.abs().sqrt() - ETA * g / g.abs().pow(3).sum().pow(1 / 3)
        ),
    ),
    "NGD": (NormalizedGD, dict(lr=ETA), lambda w, g: w - ETA * g / g.norm()),
    "Polyak": (  # c = 20: η_t = L/(c‖g‖²) ≈ 0.064 is below the cap
        PolyakStep,
        dict(lr=ETA, c=20.0),
        lambda w, g: w - min(LOSS / (20.0 * g.norm() ** 2), ETA) * g,
    ),
    "SignGD": (SignGD, dict(lr=ETA), lambda w, g: w - ETA * g.sign()),
    "Spectral": (SpectralDescent, dict(lr=ETA), lambda w, g: w - ETA * spectral(g)),
    "Steepest-inf": (
        SteepestDescent,
        dict(lr=ETA, norm=math.inf),
        lambda w, g: w - ETA * g.sign(),
    ),
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_the_plain_step_matches_the_hand_computed_one(name):
    cls, arguments, rule = HAND[name]
    _, w, g = tensors()
    torch.testing.assert_close(one_step(cls, **arguments), rule(w, g), rtol=1e-14, atol=0)


@pytest.mark.parametrize("name", sorted(HAND))
def test_weight_decay_is_decoupled(name):
    """w⁺ = rule((1 − ηλ)w, g): the weights shrink before the step, the gradient is not
    changed (coupled decay would add λw to g, which a normalized rule would then rescale)."""
    cls, arguments, rule = HAND[name]
    _, w, g = tensors()
    expected = rule((1 - ETA * LAMBDA) * w, g)
    got = one_step(cls, **arguments, weight_decay=LAMBDA)
    torch.testing.assert_close(got, expected, rtol=1e-14, atol=0)
    if name != "MD-2":  # for plain gradient descent the two coincide
        coupled = rule(w, g + LAMBDA * w)
        assert not torch.allclose(got, coupled, rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", sorted(HAND))
def test_weight_decay_alone_shrinks_the_weights(name):
    """A zero gradient: no step, but the decay (a normalized rule would otherwise make a unit
    step along the decay if it were coupled)."""
    cls, arguments, _ = HAND[name]
    w, start, _ = tensors()
    w.grad = torch.zeros_like(w)
    optimizer = cls([w], **arguments, weight_decay=LAMBDA)
    for _ in range(3):
        optimizer.step(lambda: torch.tensor(LOSS, dtype=torch.float64))
    torch.testing.assert_close(w.detach(), (1 - ETA * LAMBDA) ** 3 * start, rtol=1e-14, atol=0)


@pytest.mark.parametrize("name", sorted(HAND))
def test_a_decay_that_would_flip_the_weights_is_refused(name):
    cls, arguments, _ = HAND[name]
    w, start, _ = tensors()
    optimizer = cls([w], **arguments, weight_decay=1.0 / ETA)  # ηλ = 1
    with pytest.raises(ValueError, match="lr × weight_decay of param group 0 must be < 1"):
        optimizer.step(lambda: torch.tensor(LOSS, dtype=torch.float64))
    assert torch.equal(w.detach(), start)


# every class, with the state it keeps (momentum, the dual iterate)
STATEFUL = {
    "MD-1.5": lambda ps, **k: MirrorDescent(ps, lr=0.1, p=1.5, **k),
    "MD-3-global": lambda ps, **k: MirrorDescent(ps, lr=0.1, p=3.0, normalize="global", **k),
    "MD-2-per-tensor": lambda ps, **k: MirrorDescent(ps, lr=0.1, normalize="per_tensor", **k),
    "MD-2-tensor-lr": lambda ps, **k: MirrorDescent(ps, lr=torch.tensor(0.1), **k),
    "NGD-momentum": lambda ps, **k: NormalizedGD(ps, lr=0.1, momentum=0.9, **k),
    "NGD-per-tensor": lambda ps, **k: NormalizedGD(ps, lr=0.1, normalize="per_tensor", **k),
    "Polyak": lambda ps, **k: PolyakStep(ps, lr=0.5, f_star=0.1, c=0.5, **k),
    "SignGD-momentum": lambda ps, **k: SignGD(ps, lr=0.01, momentum=0.5, **k),
    "Spectral-momentum": lambda ps, **k: SpectralDescent(ps, lr=0.01, momentum=0.5, **k),
    "Steepest-3": lambda ps, **k: SteepestDescent(ps, lr=0.01, norm=3.0, momentum=0.3, **k),
}


def trajectory(make, steps=5, sign=1.0, **keywords):
    """Weights after each of `steps` steps on two matrices (float64) whose gradients are
    sign·g_t and whose loss is sign·L_t."""
    generator = torch.Generator().manual_seed(0)
    params = [
        torch.nn.Parameter(torch.randn(3, 3, dtype=torch.float64, generator=generator))
        for _ in range(2)
    ]
    optimizer = make(params, **keywords)
    out = []
    for t in range(steps):
        for w in params:
            w.grad = sign * torch.randn(3, 3, dtype=torch.float64, generator=generator)
        loss = torch.tensor(sign * (1.0 + 0.5 * t), dtype=torch.float64)
        optimizer.step(lambda loss=loss: loss)
        out.append([w.detach().clone() for w in params])
    return out


def assert_same(a, b):
    for step_a, step_b in zip(a, b, strict=True):
        for x, y in zip(step_a, step_b, strict=True):
            assert torch.equal(x, y)


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_maximize_is_minimising_the_negated_objective(name):
    """maximize=True on f is the optimiser on −f (gradients and, for Polyak, the loss
    negated), bit for bit, momentum and dual iterates included."""
    make = STATEFUL[name]
    maximized = trajectory(make, maximize=True)
    assert_same(maximized, trajectory(make, sign=-1.0))
    with pytest.raises(AssertionError):
        assert_same(maximized, trajectory(make))


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_a_copy_taken_mid_run_steps_as_the_original(name, how):
    """copy.deepcopy of (model, optimiser) or a pickle round trip, taken after two steps,
    continues bit for bit as the original (torch pickles only defaults, state and groups)."""
    generator = torch.Generator().manual_seed(1)
    params = [torch.nn.Parameter(torch.randn(3, 3, dtype=torch.float64, generator=generator))]
    optimizer = STATEFUL[name](params)
    grads = [torch.randn(3, 3, dtype=torch.float64, generator=generator) for _ in range(4)]
    loss = torch.tensor(1.5, dtype=torch.float64)
    for g in grads[:2]:
        params[0].grad = g.clone()
        optimizer.step(lambda: loss)
    if how == "deepcopy":
        copy_params, copy_optimizer = copy.deepcopy((params, optimizer))
    else:
        copy_params, copy_optimizer = pickle.loads(pickle.dumps((params, optimizer)))
    for g in grads[2:]:
        for ps, opt in ((params, optimizer), (copy_params, copy_optimizer)):
            ps[0].grad = g.clone()
            opt.step(lambda: loss)
        assert torch.equal(params[0], copy_params[0])


@pytest.mark.parametrize("decay", [0.0, 0.3])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_the_foreach_path_equals_the_per_tensor_path_bit_for_bit(name, maximize, decay):
    make = STATEFUL[name]
    keywords = dict(maximize=maximize, weight_decay=decay)
    assert_same(
        trajectory(make, foreach=True, **keywords), trajectory(make, foreach=False, **keywords)
    )


def test_foreach_none_chooses_as_torch_does():
    """None: the foreach kernels where every parameter is on a GPU (torch's rule); here, on
    the CPU, the per-tensor path."""
    cpu = [torch.zeros(2)]
    assert use_foreach({"foreach": None}, cpu) is False
    assert use_foreach({"foreach": True}, cpu) is True
    assert use_foreach({"foreach": False}, cpu) is False
    optimizer = NormalizedGD(cpu, lr=0.1)
    assert optimizer.param_groups[0]["foreach"] is None


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_differentiable_is_refused_by_name(name):
    with pytest.raises(ValueError, match=r": differentiable must be False"):
        STATEFUL[name]([torch.nn.Parameter(torch.zeros(2, 2))], differentiable=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_half_precision_with_the_keywords_is_stepped_in_float32(name, dtype):
    """maximize and weight decay on a float16/bfloat16 parameter: the float32 step, rounded
    (as without them)."""
    make = STATEFUL[name]
    keywords = dict(maximize=True, weight_decay=0.1)
    generator = torch.Generator().manual_seed(2)
    start = (torch.rand(3, 3, generator=generator) + 0.5).to(dtype)
    grad = torch.randn(3, 3, generator=generator).to(dtype)
    half, full = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.float())
    for w, g in ((half, grad), (full, grad.float())):
        w.grad = g
        make([w], **keywords).step(lambda: torch.tensor(-2.0))
    assert half.dtype == dtype and torch.equal(half.detach(), full.detach().to(dtype))
    assert not torch.equal(half.detach(), start)


# ---------------------------------------------------------------------------------------------
# One naming scheme


@pytest.mark.parametrize(
    "make, old, new",
    [
        (
            lambda ps, **k: NormalizedGD(ps, lr=0.1, **k),
            dict(norm="per_tensor"),
            dict(normalize="per_tensor"),
        ),
        (lambda ps, **k: PolyakStep(ps, c=2.0, **k), dict(lr_max=0.3), dict(lr=0.3)),
    ],
)
def test_old_argument_names_still_work_with_a_deprecation_warning(make, old, new):
    with pytest.warns(DeprecationWarning, match="is now called") as record:
        before = trajectory(make, **old)
    assert record[0].filename == __file__  # the warning points at the caller's line
    assert_same(before, trajectory(make, **new))
    with pytest.raises(TypeError, match="not both"):
        make([torch.nn.Parameter(torch.zeros(2))], **old, **{k: v for k, v in new.items()})


def test_every_class_takes_the_same_torch_keywords_and_spells_lr_the_same():
    import inspect

    for cls in (MirrorDescent, NormalizedGD, PolyakStep, SignGD, SpectralDescent, SteepestDescent):
        parameters = inspect.signature(cls).parameters
        assert list(parameters)[:2] == ["params", "lr"], cls
        for key, default in dict(
            weight_decay=0.0, maximize=False, foreach=None, differentiable=False
        ).items():
            assert parameters[key].default == default, (cls, key)
            assert parameters[key].kind is inspect.Parameter.KEYWORD_ONLY, (cls, key)


def test_every_class_refuses_an_unknown_keyword_naming_it():
    # the keyword-only arguments are read from **keywords (CheckedOptimizer.KEYWORDS): a typo
    # must still be a TypeError, as in torch's classes, not a silently ignored argument
    w = [torch.nn.Parameter(torch.zeros(2, 2))]
    for cls in (MirrorDescent, NormalizedGD, PolyakStep, SignGD, SpectralDescent, SteepestDescent):
        with pytest.raises(TypeError, match="'wieght_decay'"):
            cls(w, lr=0.1, wieght_decay=0.1)
        assert cls(w, lr=0.1, weight_decay=0.25).param_groups[0]["weight_decay"] == 0.25


def test_true_means_global_normalisation_in_both_classes():
    """normalize=True is "global" (the papers' ‖∇L‖) in MirrorDescent and NormalizedGD alike
    (and in the engine's configurations), as is NormalizedGD's default."""
    w = [torch.nn.Parameter(torch.zeros(2))]
    assert MirrorDescent(w, lr=0.1, normalize=True).param_groups[0]["normalize"] == "global"
    assert NormalizedGD(w, lr=0.1, normalize=True).param_groups[0]["normalize"] == "global"
    assert NormalizedGD(w, lr=0.1).param_groups[0]["normalize"] == "global"


# ---------------------------------------------------------------------------------------------
# State, checkpoints, schedulers, training loops


def test_mirror_descent_keeps_the_dual_iterate_and_a_copy_of_the_weights():
    """θ and a copy of w as the step wrote it (what edits are detected against: torch's
    version counter misses edits through `.data`), nothing more; nothing at p = 2."""
    w = torch.nn.Parameter(torch.randn(50, 40, dtype=torch.float64))
    optimizer = MirrorDescent([w], lr=0.1, p=1.5)
    w.grad = torch.randn_like(w)
    optimizer.step()
    state = optimizer.state_dict()["state"]
    assert list(state) == [0] and set(state[0]) == {"dual", "weight"}
    assert state[0]["dual"].shape == w.shape
    assert torch.equal(state[0]["weight"], w.detach())
    assert state[0]["weight"].data_ptr() != w.data_ptr()  # a copy, not the parameter
    assert sum(t.numel() for t in state[0].values()) == 2 * w.numel()
    euclidean = MirrorDescent([w], lr=0.1)  # p = 2: no state at all
    euclidean.step()
    assert len(euclidean.state) == 0


def test_a_checkpoint_of_an_earlier_version_loads():
    """Param groups saved before the torch keywords (and NormalizedGD's old `norm`) existed;
    MirrorDescent state with the copy of w is kept as it is."""
    w = torch.nn.Parameter(torch.randn(3, 3, dtype=torch.float64))
    w.grad = torch.randn_like(w)
    md = MirrorDescent([w], lr=0.1, p=1.5)
    md.step()
    saved = md.state_dict()
    for group in saved["param_groups"]:
        for key in ("weight_decay", "maximize", "foreach", "differentiable"):
            del group[key]
    resumed = MirrorDescent([w], lr=0.1, p=1.5)
    resumed.load_state_dict(saved)
    assert set(resumed.state[w]) == {"dual", "weight"}
    assert torch.equal(resumed.state[w]["weight"], saved["state"][0]["weight"])
    assert resumed.param_groups[0]["weight_decay"] == 0.0
    ngd = NormalizedGD([w], lr=0.1).state_dict()
    ngd["param_groups"][0]["norm"] = ngd["param_groups"][0].pop("normalize")
    loaded = NormalizedGD([w], lr=0.1, normalize="per_tensor")
    loaded.load_state_dict(ngd)
    assert loaded.param_groups[0]["normalize"] == "global"


@pytest.mark.parametrize("with_copy", [True, False])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_mirror_descent_checkpoints_resume_bit_for_bit_with_or_without_the_copy(dtype, with_copy):
    """torch.save / torch.load(weights_only=True) mid-run: the resumed run is the
    uninterrupted one, for a checkpoint holding the copy of w and for one without it (saved by
    the version that kept θ alone: the copy is rebuilt as (∇ψ)⁻¹(θ)); θ of float16/bfloat16
    parameters stays float32 (torch's load_state_dict would cast it to their dtype)."""
    generator = torch.Generator().manual_seed(4)
    grads = [(0.1 * torch.randn(4, 4, generator=generator)).to(dtype) for _ in range(6)]
    start = torch.randn(4, 4, generator=generator).to(dtype)
    working = torch.float64 if dtype == torch.float64 else torch.float32

    def run(resume_at=None):
        w = torch.nn.Parameter(start.clone())
        optimizer = MirrorDescent([w], lr=0.1, p=1.5)
        for t, g in enumerate(grads):
            if t == resume_at:
                state = optimizer.state_dict()
                if not with_copy:
                    state["state"][0] = {"dual": state["state"][0]["dual"]}
                buffer = io.BytesIO()
                torch.save({"w": w.detach(), "optimizer": state}, buffer)
                buffer.seek(0)
                saved = torch.load(buffer, weights_only=True)
                w = torch.nn.Parameter(saved["w"].clone())
                optimizer = MirrorDescent([w], lr=0.1, p=1.5)
                optimizer.load_state_dict(saved["optimizer"])
                loaded = optimizer.state[w]
                assert loaded["dual"].dtype == working and torch.equal(loaded["weight"], w.detach())
            w.grad = g
            optimizer.step()
        return w.detach(), optimizer

    resumed, optimizer = run(resume_at=3)
    assert torch.equal(resumed, run()[0])
    w = optimizer.param_groups[0]["params"][0]
    w.data.mul_(0.5)  # an edit through .data after resuming is honoured too
    edited = w.detach().clone()
    w.grad = torch.zeros_like(w)
    optimizer.step()  # w rewritten as (∇ψ)⁻¹(∇ψ(w)): a few units of roundoff
    torch.testing.assert_close(w.detach(), edited, rtol=4 * torch.finfo(dtype).eps, atol=0)


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_a_checkpoint_through_torch_save_resumes_bit_for_bit(name):
    """torch.save / torch.load(weights_only=True) of the state in the middle of a run, with
    weight decay and maximize on: the resumed run is the uninterrupted one."""
    make = STATEFUL[name]
    keywords = dict(weight_decay=0.05, maximize=True)
    generator = torch.Generator().manual_seed(3)
    grads = [torch.randn(3, 3, dtype=torch.float64, generator=generator) for _ in range(8)]
    start = torch.randn(3, 3, dtype=torch.float64, generator=generator)

    def run(resume_at=None):
        w = torch.nn.Parameter(start.clone())
        optimizer = make([w], **keywords)
        for t, g in enumerate(grads):
            if t == resume_at:
                buffer = io.BytesIO()
                torch.save({"w": w.detach(), "optimizer": optimizer.state_dict()}, buffer)
                buffer.seek(0)
                saved = torch.load(buffer, weights_only=True)
                w = torch.nn.Parameter(saved["w"].clone())
                optimizer = make([w], **keywords)
                optimizer.load_state_dict(saved["optimizer"])
            w.grad = g
            optimizer.step(lambda t=t: torch.tensor(-1.0 - t, dtype=torch.float64))
        return w.detach()

    assert torch.equal(run(resume_at=4), run())


@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("foreach", [False, True])
def test_mirror_descent_at_p_2_is_torch_sgd_under_a_scheduler(foreach, maximize):
    """A drop-in check: MirrorDescent(p=2) with torch's StepLR is torch.optim.SGD with the
    same schedule, bit for bit (the schedule reaches the step through group["lr"])."""

    def run(make):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        model.double()
        optimizer = make(model.parameters())
        schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
        x = torch.randn(16, 4, dtype=torch.float64)
        y = torch.randn(16, 1, dtype=torch.float64)
        for _ in range(10):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            schedule.step()
        return [p.detach() for p in model.parameters()], optimizer.param_groups[0]["lr"]

    keywords = dict(foreach=foreach, maximize=maximize)
    ours, lr = run(lambda ps: MirrorDescent(ps, lr=0.2, **keywords))
    theirs, torch_lr = run(lambda ps: torch.optim.SGD(ps, lr=0.2, **keywords))
    assert lr == torch_lr == 0.2 * 0.5**3
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_a_plain_training_loop_with_a_cosine_schedule_lowers_the_loss(name):
    """zero_grad / backward / step / scheduler.step on an nn.Module, as with torch.optim."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(  # no biases: SpectralDescent steps matrices only
        torch.nn.Linear(6, 6, bias=False), torch.nn.Tanh(), torch.nn.Linear(6, 6, bias=False)
    )
    optimizer = STATEFUL[name](model.parameters(), weight_decay=1e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=60)
    x = torch.randn(64, 6)
    y = torch.tanh(x @ torch.randn(6, 6))
    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step(lambda loss=loss: loss)
        schedule.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses[::10]
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# torch.compile and reprs


def test_dynamo_sees_no_graph_breaks_in_a_step():
    """The step is left out of compiled graphs (its safety checks read values on the host):
    dynamo traces nothing in it, so there is nothing to break (on eac3930, about 40 lines of
    graph-break warnings). Three classes: every class's step is wrapped the same way."""
    torch._dynamo.reset()
    for name in ("MD-1.5", "NGD-momentum", "Polyak"):
        step = STATEFUL[name]([tensors()[0]]).step
        explanation = torch._dynamo.explain(step)(lambda: torch.tensor(LOSS))
        assert explanation.graph_count == 0 and explanation.graph_break_count <= 0, name
        assert not explanation.break_reasons, name


@pytest.mark.slow  # compiling takes about 2 s a class
@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_a_compiled_step_is_the_eager_step(name, caplog):
    make = STATEFUL[name]
    torch._dynamo.reset()
    w_eager, w_compiled = tensors()[0], tensors()[0]
    make([w_eager]).step(lambda: torch.tensor(LOSS, dtype=torch.float64))
    with warnings.catch_warnings(record=True) as caught:
        step = torch.compile(make([w_compiled]).step)
        step(lambda: torch.tensor(LOSS, dtype=torch.float64))
    assert torch.equal(w_eager.detach(), w_compiled.detach())
    messages = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "graph break" in m.lower()], messages


def test_optimisers_print_their_hyper_parameters():
    w = [torch.nn.Parameter(torch.zeros(2, 2))]
    text = repr(MirrorDescent(w, lr=0.1, p=1.5, weight_decay=0.01))
    for line in ("MirrorDescent (", "lr: 0.1", "p: 1.5", "normalize: none", "weight_decay: 0.01"):
        assert line in text, text
    assert "maximize: False" in repr(SpectralDescent(w, lr=0.1))


def test_importing_the_optimisers_leaves_torch_dynamo_unloaded_until_one_is_made():
    """torch.compiler.disable (the step's exclusion from compiled graphs) imports
    torch._dynamo, 1.5 s: it happens when the first optimiser is made, not on import."""
    import subprocess
    import sys

    code = (
        "import sys, torch, attnbias.optim as o, attnbias.engine\n"
        "print('torch._dynamo' in sys.modules)\n"
        "o.MirrorDescent([torch.zeros(2, requires_grad=True)], lr=0.1, p=1.5)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
