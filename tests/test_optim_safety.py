"""The optimisers with untrusted input (issue 22): every hyper-parameter is checked wherever it
enters (constructor, param groups, add_param_group, load_state_dict, and each step, where
schedulers write), the ℓp mirror step is right at any scale or refused where the exact result
does not fit the dtype, and parameters of every dtype are stepped or refused by name."""

import copy
import math

import mpmath
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.optim import Optimizer

import attnbias.optim as optim
from attnbias.norms import mirror_map
from attnbias.optim import (
    MirrorDescent,
    NormalizedGD,
    PolyakStep,
    SignGD,
    SpectralDescent,
    SteepestDescent,
)
from attnbias.optim import functional as F

pytestmark = pytest.mark.usefixtures("one_thread")

NAN, INF = math.nan, math.inf
BAD_LR = [-0.1, 0.0, NAN, INF, -INF, True, "0.1", None, torch.tensor([0.1, 0.2]),
          torch.tensor(-1.0), torch.tensor(NAN), torch.tensor(1j)]  # fmt: skip
BAD_MOMENTUM = [-0.1, 1.0, 2.0, NAN, INF, True, "0.5", None, torch.tensor(0.5)]

# class: (constructor arguments that work, {group key: (constructor argument, bad values)})
SPECS = {
    MirrorDescent: (
        dict(lr=0.1, p=3.0, normalize=True),
        {
            "lr": ("lr", BAD_LR),
            "p": ("p", [1.0, 0.5, -3.0, NAN, INF, True, "3", None]),
            "normalize": ("normalize", ["l2", "Global", 1, 2.0, [], "per tensor"]),
        },
    ),
    NormalizedGD: (
        dict(lr=0.1, momentum=0.5, normalize="global"),
        {
            "lr": ("lr", BAD_LR),
            "momentum": ("momentum", BAD_MOMENTUM),
            "normalize": ("normalize", ["layer", "Global", 2, 1.5]),
        },
    ),
    PolyakStep: (
        dict(lr=0.5, f_star=0.0, c=1.0),
        {
            "lr": ("lr", [x for x in BAD_LR if x is not INF]),  # γ_b = ∞: uncapped
            "f_star": ("f_star", [NAN, INF, -INF, True, "0", None]),
            "c": ("c", [0.0, -1.0, NAN, INF, True, "1", None]),
        },
    ),
    SignGD: (
        dict(lr=0.1, momentum=0.5),
        {"lr": ("lr", BAD_LR), "momentum": ("momentum", BAD_MOMENTUM)},
    ),
    SpectralDescent: (
        dict(lr=0.1, momentum=0.5, method="newton-schulz"),
        {
            "lr": ("lr", BAD_LR),
            "momentum": ("momentum", BAD_MOMENTUM),
            "method": ("method", ["qr", "SVD", None, 1]),
        },
    ),
    SteepestDescent: (
        dict(lr=0.1, norm=3.0, momentum=0.5),
        {
            "lr": ("lr", BAD_LR),
            "norm": ("norm", [1.0, 0.5, NAN, -INF, True, "inf", None]),
            "momentum": ("momentum", BAD_MOMENTUM),
        },
    ),
}
# the torch.optim keywords, the same in every class
TORCH_BAD = {
    "weight_decay": ("weight_decay", [-0.1, NAN, INF, True, "0", None]),
    "maximize": ("maximize", [1, "yes", None]),
    "foreach": ("foreach", [1, "no"]),
    "differentiable": ("differentiable", [True, 1]),
}
for _, keys in SPECS.values():
    keys.update(TORCH_BAD)
FLAGS = ("maximize", "foreach", "differentiable")
CHOICES = {"normalize", "norm", "method"}  # option names; "norm" of SteepestDescent is a number
CASES = [
    (cls, key, bad)
    for cls, (_, keys) in SPECS.items()
    for key, (_, values) in keys.items()
    for bad in values
]
# a step or a checkpoint may find lr = 0 (a scheduler's warm-up start or annealing end)
RUNNING_CASES = [
    (cls, key, bad)
    for cls, key, bad in CASES
    if not (key == "lr" and isinstance(bad, float) and bad == 0.0)
]


def case_id(case) -> str:
    cls, key, bad = case
    return f"{cls.__name__}-{key}-{bad!r}"


def expected_error(cls, key, bad) -> type:
    """TypeError for a value of the wrong type, ValueError for one out of range."""
    if key in FLAGS:  # differentiable=True is refused as a value: it is not supported
        return ValueError if bad is True else TypeError
    option = key in CHOICES and not (cls is SteepestDescent and key == "norm")
    if option:
        return ValueError if isinstance(bad, str) else TypeError
    if isinstance(bad, (bool, str, list, type(None))):
        return TypeError
    if isinstance(bad, torch.Tensor):  # a tensor is a step size only: one real element
        if key != "lr" or bad.numel() != 1 or bad.is_complex():
            return TypeError
    return ValueError


def parameter(cls, value=1.0, dtype=torch.float64):
    shape = (2, 2) if cls is SpectralDescent else (3,)
    return torch.nn.Parameter(torch.full(shape, value, dtype=dtype))


def make(cls, params, **changes):
    return cls(params, **{**SPECS[cls][0], **changes})


def refused(cls, key, bad, where, name=None):
    """pytest.raises for a bad value of `key`: its error type, and a message naming it (as
    `name`, the constructor's spelling, if given) and where it is."""
    message = rf"^{cls.__name__}: {name or key}{where} must"
    return pytest.raises(expected_error(cls, key, bad), match=message)


def take_a_step(optimizer, params, grad=0.5):
    for w in params:
        w.grad = torch.full_like(w, grad)
    optimizer.step(lambda: torch.tensor(2.0))


def test_every_exported_optimiser_is_covered():
    exported = {
        cls
        for cls in (getattr(optim, name) for name in optim.__all__)
        if isinstance(cls, type) and issubclass(cls, Optimizer)
    }
    assert exported == set(SPECS)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_bad_constructor_argument_is_refused(case):
    cls, key, bad = case
    argument = SPECS[cls][1][key][0]
    with refused(cls, key, bad, "", name=argument):
        make(cls, [parameter(cls)], **{argument: bad})


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_bad_value_in_a_param_group_is_refused(case):
    """Torch checks only the constructor: MirrorDescent([{"params": [w], "lr": -0.1}], ...)
    did gradient ascent."""
    cls, key, bad = case
    groups = [{"params": [parameter(cls)]}, {"params": [parameter(cls)], key: bad}]
    with refused(cls, key, bad, " of param group 1"):
        make(cls, groups)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_bad_value_in_add_param_group_is_refused(case):
    cls, key, bad = case
    optimizer = make(cls, [parameter(cls)])
    with refused(cls, key, bad, " of param group 1"):
        optimizer.add_param_group({"params": [parameter(cls)], key: bad})
    assert len(optimizer.param_groups) == 1


@pytest.mark.parametrize("case", RUNNING_CASES, ids=case_id)
def test_a_bad_value_written_into_a_group_is_refused_at_the_step(case):
    """Schedulers (and users) write group["lr"] and group["momentum"] between steps."""
    cls, key, bad = case
    w = parameter(cls)
    optimizer = make(cls, [w])
    optimizer.param_groups[0][key] = bad
    with refused(cls, key, bad, " of param group 0"):
        take_a_step(optimizer, [w])
    assert torch.equal(w.detach(), torch.ones_like(w))


@pytest.mark.parametrize("case", RUNNING_CASES, ids=case_id)
def test_a_bad_value_in_a_loaded_state_dict_is_refused(case):
    """A checkpoint is untrusted input: a bad value leaves the optimiser as it was."""
    cls, key, bad = case
    optimizer = make(cls, [parameter(cls)])
    state = copy.deepcopy(optimizer.state_dict())
    state["param_groups"][0][key] = bad
    before = copy.deepcopy(optimizer.param_groups[0])
    with refused(cls, key, bad, " of param group 0"):
        optimizer.load_state_dict(state)
    assert {k: v for k, v in optimizer.param_groups[0].items() if k != "params"} == {
        k: v for k, v in before.items() if k != "params"
    }


def test_a_scheduler_that_writes_a_bad_learning_rate_is_stopped_at_the_step():
    w = parameter(MirrorDescent)
    optimizer = MirrorDescent([w], lr=0.1, p=3.0)
    torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: -1.0)
    with pytest.raises(ValueError, match=r"lr of param group 0 must be >= 0, got -0\.1"):
        take_a_step(optimizer, [w])
    assert torch.equal(w.detach(), torch.ones_like(w))


@pytest.mark.parametrize("cls", list(SPECS))
def test_a_warm_up_from_lr_zero_steps_and_checkpoints(cls):
    """Schedulers set lr = 0 at a warm-up's start (the Hugging Face Trainer's linear schedule)
    or an annealing's end: a step then changes nothing, and a checkpoint saved then loads."""
    w = parameter(cls)
    optimizer = make(cls, [w])
    torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(step / 2, 1.0))
    assert optimizer.param_groups[0]["lr"] == 0.0
    take_a_step(optimizer, [w])
    assert torch.equal(w.detach(), torch.ones_like(w))
    make(cls, [parameter(cls)]).load_state_dict(optimizer.state_dict())
    optimizer.param_groups[0]["lr"] = 0.1
    take_a_step(optimizer, [w])
    assert not torch.equal(w.detach(), torch.ones_like(w))


def test_schedulers_still_work_with_float_and_tensor_learning_rates():
    for lr in (0.1, torch.tensor(0.1, dtype=torch.float64)):
        w = parameter(NormalizedGD)
        optimizer = NormalizedGD([w], lr=lr)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        for _ in range(3):
            take_a_step(optimizer, [w])
            scheduler.step()
        assert float(optimizer.param_groups[0]["lr"]) == pytest.approx(0.0125)
        # three unit steps of 0.1, 0.05, 0.025 along −(1, 1, 1)/√3
        torch.testing.assert_close(w.detach(), torch.full((3,), 1 - 0.175 / math.sqrt(3)))


def test_a_group_sets_steepest_descents_norm_and_polyaks_cap_by_their_stored_names():
    a, b = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64)), parameter(SteepestDescent)
    optimizer = SteepestDescent([{"params": [a], "norm": 1.5}, {"params": [b]}], lr=1.0)
    a.grad = torch.tensor([3.0, -4.0, 5.0], dtype=torch.float64)
    b.grad = torch.tensor([3.0, -4.0, 0.0], dtype=torch.float64)
    optimizer.step()  # ℓ1.5 by hand (test_steepest), ℓ2 for the other group
    expected = torch.tensor([-9.0, 16, -25], dtype=torch.float64) / 36
    torch.testing.assert_close(a.detach(), expected, rtol=1e-15, atol=0)
    torch.testing.assert_close(b.detach(), torch.tensor([0.4, 1.8, 1.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="param group 1 gives 'lr_max'; a group sets it as 'lr'"):
        PolyakStep([{"params": [parameter(PolyakStep)]}, {"params": [b], "lr_max": 0.5}], 1.0)


def test_accepted_values_are_normalised_in_every_place():
    w = parameter(MirrorDescent)
    optimizer = MirrorDescent([{"params": [w], "normalize": True, "p": 3}], lr=1)
    optimizer.add_param_group({"params": [parameter(MirrorDescent)], "normalize": None})
    assert [g["normalize"] for g in optimizer.param_groups] == ["global", "none"]
    assert optimizer.param_groups[0]["p"] == 3.0 and isinstance(
        optimizer.param_groups[0]["p"], float
    )


# ---------------------------------------------------------------------------------------------
# The ℓp mirror step at every scale, against 80-digit arithmetic


def exact_step(w, g, lr, p, normalize):
    """One ℓp mirror step in 80-digit arithmetic from the (exactly represented) w and g: the
    new weights, and for each entry its tolerance (see `tolerance`)."""
    mpmath.mp.dps = 80
    P, eta = mpmath.mpf(p), mpmath.mpf(lr)
    W = [mpmath.mpf(float(x)) for x in w]
    G = [mpmath.mpf(float(x)) for x in g]
    if normalize:
        q = P / (P - 1)
        norm = mpmath.fsum(abs(x) ** q for x in G) ** (1 / q)
        G = [x / norm for x in G]
    out = []
    for x, u in zip(W, G):
        theta = mpmath.sign(x) * abs(x) ** (P - 1)
        new = theta - eta * u
        out.append((mpmath.sign(new) * abs(new) ** (1 / (P - 1)), theta, eta * u, new))
    return out


def tolerance(theta, step, new, p, eps):
    """Relative error allowed for w⁺ = (∇ψ)⁻¹(θ − ηu): a few eps, times the cancellation
    κ = (|θ| + |ηu|)/|θ⁺| and the map's 1/(p − 1) applied to the logarithms' size (the log
    domain carries |log θ|·eps)."""
    if new == 0:
        return 0.0
    kappa = (abs(theta) + abs(step)) / abs(new)
    logs = max((abs(float(mpmath.log(abs(x)))) for x in (theta, step) if x != 0), default=0.0)
    return 64 * eps * (1 + float(kappa) * (1 + logs) / (p - 1))


def mirror_case(p, scale, dtype, lr=0.1):
    """Weights of magnitude `scale` (one of them 0), and gradients with a zero entry, unit and
    small entries, and entries with ηg comparable to θ = |w|^{p−1} where that is a normal
    number of the dtype."""
    info = torch.finfo(dtype)
    w = [scale, -scale, 0.5 * scale, -2 * scale, 1.5 * scale, 0.0]
    g = [0.0, 1.0, -1e-3, 0.3, None, None]
    for k, factor in ((4, 0.7), (5, -0.5)):
        theta = float(mpmath.mpf(abs(w[k])) ** (mpmath.mpf(p) - 1)) if w[k] else 0.0
        comparable = factor * theta / lr
        g[k] = comparable if info.tiny < abs(comparable) < info.max / 4 else factor * 1e-3
    return torch.tensor(w, dtype=dtype), torch.tensor(g, dtype=dtype)


SCALES = {torch.float64: [1e-300, 1e-100, 1e-10, 1.0, 2.0, 1e10, 1e100, 1e160],
          torch.float32: [1e-37, 1e-10, 1.0, 2.0, 1e10, 1e30]}  # fmt: skip


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("p", [1.01, 3.0, 200.0, 2000.0])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_one_mirror_step_is_exact_or_refused_at_every_scale(dtype, p, normalize):
    """|w| from 1e-300 to 1e160: the step is returned to `tolerance` wherever the exact w⁺ fits
    the dtype (below its smallest normal number, to an absolute error under that number), and
    where some entry's does not, FloatingPointError names the parameter and nothing changes.
    On eac3930 p = 2000 at w = 2 gave inf, and p = 3 at w = 1e-300 with a zero gradient
    gave 0."""
    info = torch.finfo(dtype)
    outcomes = set()
    for scale in SCALES[dtype]:
        w0, g = mirror_case(p, scale, dtype)
        exact = exact_step(w0, g, 0.1, p, normalize)
        w = torch.nn.Parameter(w0.clone())
        w.grad = g
        optimizer = MirrorDescent([w], lr=0.1, p=p, normalize=normalize)
        largest = max(abs(e[0]) for e in exact)
        assert not 0.999 < largest / info.max < 1.001, "too close to the edge to test"
        if largest > info.max:
            with pytest.raises(FloatingPointError, match=r"parameter 0 of group 0 .* range"):
                optimizer.step()
            assert torch.equal(w.detach(), w0)
            outcomes.add("refused")
            continue
        optimizer.step()
        outcomes.add("stepped")
        for k, (want, theta, step, new) in enumerate(exact):
            got = mpmath.mpf(float(w.detach()[k]))
            if abs(want) < info.tiny:
                assert abs(got - want) <= info.tiny, (scale, k, float(got), float(want))
            else:
                error = float(abs(got - want) / abs(want))
                allowed = tolerance(theta, step, new, p, info.eps)
                assert error <= allowed, (scale, k, float(got), float(want), error, allowed)
    assert "stepped" in outcomes


def test_the_issues_replays():
    """MirrorDescent([w], lr=0.1, p=2000) at w = (2, 1) gave (inf, 0.99995); p = 3 at 1e160
    and float32 p = 200 at 2 overflowed too."""
    for dtype, p, w0 in [
        (torch.float64, 2000.0, [2.0, 1.0]),
        (torch.float64, 3.0, [1e160, 1.0]),
        (torch.float32, 200.0, [2.0, 1.0]),
    ]:
        w = torch.nn.Parameter(torch.tensor(w0, dtype=dtype))
        w.grad = torch.ones_like(w)
        MirrorDescent([w], lr=0.1, p=p).step()
        want = [float(e[0]) for e in exact_step(torch.tensor(w0), w.grad, 0.1, p, False)]
        torch.testing.assert_close(w.detach().double(), torch.tensor(want), rtol=1e-6, atol=0)
        assert float(w.detach()[0]) == pytest.approx(w0[0], rel=1e-6)


def test_steps_from_a_dual_iterate_beyond_the_range_continue_exactly():
    """Five steps of ℓ2000-MD at |w| ≈ 2 (θ ≈ 2^1999, not a float64): each matches 80-digit
    arithmetic carried from the previous exact iterate's weights."""
    w = torch.nn.Parameter(torch.tensor([2.0, -3.0, 1.0, 1e-200], dtype=torch.float64))
    optimizer = MirrorDescent([w], lr=1.0, p=2000.0, normalize=True)
    for t in range(5):
        before = w.detach().clone()
        # (the last entry's steps do not undo one another: θ⁺ = 0 would amplify w's rounding)
        w.grad = torch.tensor([1.0, -1.0, 0.5, 0.3 * (t + 1) * (-1.0) ** t], dtype=torch.float64)
        optimizer.step()
        exact = exact_step(before, w.grad, 1.0, 2000.0, True)
        for k, (want, *_) in enumerate(exact):
            assert float(w.detach()[k]) == pytest.approx(float(want), rel=1e-12), (t, k)
    assert bool(torch.isfinite(w).all()) and float(w.detach()[2]) != 1.0


def test_the_engine_core_steps_runs_of_different_p_scale_safely():
    """`functional.step_` with one p per run (the batched engine) takes the same exact steps."""
    w0 = torch.tensor([[2.0, -1e-200, 1e160]], dtype=torch.float64).repeat(3, 1)
    g = torch.tensor([[1.0, 0.0, -1.0]], dtype=torch.float64).repeat(3, 1)
    ps = torch.tensor([1.5, 3.0, 2000.0], dtype=torch.float64)
    w = w0.clone()
    theta = mirror_map(w, ps)
    F.step_([w], [g], None, 0.1, p=ps, duals=[theta])
    for r, p in enumerate(ps.tolist()):
        exact = exact_step(w0[r], g[r], 0.1, p, False)
        for k, (want, *_) in enumerate(exact):
            assert float(w[r, k]) == pytest.approx(float(want), rel=1e-12), (p, k)


def test_a_step_near_the_top_of_float32_is_taken_or_refused():
    """ℓ1.1 in float32: θ = |w|^0.1 is ~6300 at |w| = 1e38, and w⁺ = θ⁺^10 overflows once θ⁺
    passes 6640. Decided from a bound on max|θ| without a pass over the weights."""
    for lr, refused in ((1.0, False), (1e4, True)):
        w = torch.nn.Parameter(torch.tensor([1e38, 1.0], dtype=torch.float32))
        w.grad = torch.tensor([-1.0, 0.0], dtype=torch.float32)
        optimizer = MirrorDescent([w], lr=lr, p=1.1)
        if refused:
            with pytest.raises(FloatingPointError, match="leaves float32's range"):
                optimizer.step()
            assert (
                w.detach()[0].item() == pytest.approx(1e38, rel=1e-6)
                and w.detach()[1].item() == 1.0
            )
        else:
            optimizer.step()
            assert math.isfinite(w.detach()[0].item()) and w.detach()[0].item() > 1e38


def test_an_edit_to_huge_weights_is_seen_by_the_range_check():
    """The bound on max|θ| is rebuilt when the weights are edited, and never saved: a state
    dict cannot vouch for it. (ℓ1.5: θ = |w|^0.5, and w⁺ overflows once θ⁺ passes 1.34e154.)"""
    w = torch.nn.Parameter(torch.tensor([1.0, -1.0], dtype=torch.float64))
    optimizer = MirrorDescent([w], lr=1e150, p=1.5)
    w.grad = torch.tensor([1e-200, 0.0], dtype=torch.float64)
    optimizer.step()
    assert all(set(s) == {"dual", "weight"} for s in optimizer.state_dict()["state"].values())
    with torch.no_grad():
        w.fill_(1e308)  # θ = 1e154: a step of 1e150 keeps it in range, one of 1e154 does not
    w.grad = torch.tensor([-1.0, 0.0], dtype=torch.float64)
    optimizer.step()
    assert float(w.detach()[0]) == pytest.approx(1.00020001e308, rel=1e-12)
    optimizer.param_groups[0]["lr"] = 1e154
    before = w.detach().clone()
    with pytest.raises(FloatingPointError, match=r"parameter 0 of group 0 .* leaves float64's"):
        optimizer.step()
    assert torch.equal(w.detach(), before)


@pytest.mark.parametrize("p", [1.5, 2.0, 3.0])
@pytest.mark.parametrize("bad", [NAN, INF])
def test_plain_mirror_descent_refuses_non_finite_gradients_and_weights(p, bad):
    """Plain steps let a NaN gradient into the weights on eac3930; now they refuse it, as the
    normalised ones do (p ≠ 2: NaN or infinite weights are refused too)."""
    a, b = parameter(MirrorDescent), parameter(MirrorDescent)
    optimizer = MirrorDescent([a, b], lr=0.1, p=p)
    a.grad, b.grad = torch.ones(3, dtype=torch.float64), torch.tensor([1.0, bad, 0.0])
    with pytest.raises(FloatingPointError, match=r"gradient of parameter 1 of group 0"):
        optimizer.step()
    assert torch.equal(a.detach(), torch.ones(3, dtype=torch.float64))
    if p != 2.0:
        b.grad = torch.ones(3, dtype=torch.float64)
        with torch.no_grad():
            b[1] = bad
        with pytest.raises(FloatingPointError, match=r"parameter 1 of group 0 .* NaN or infinite"):
            optimizer.step()


@pytest.mark.parametrize("cls", [NormalizedGD, PolyakStep, SignGD, SteepestDescent])
def test_a_step_that_would_overflow_the_weights_is_refused(cls):
    """p = 2-like steps move an entry by at most η (η/(1 − β), η_t‖g‖); only where that
    reaches half the spacing of numbers at the top of the dtype is the result checked first
    (no cost otherwise). Here each step adds ≥ 5.8e306 to 1.79e308."""
    w = parameter(cls, value=1.79e308)
    changes = dict(lr=1e307, c=1e-307) if cls is PolyakStep else dict(lr=1e307)
    optimizer = make(cls, [w], **changes)
    with pytest.raises(FloatingPointError, match=r"parameter 0 of group 0 .* leaves float64's"):
        take_a_step(optimizer, [w], grad=-1.0)
    assert torch.equal(w.detach(), torch.full_like(w, 1.79e308))
    with torch.no_grad():
        w.fill_(1.0)
    take_a_step(optimizer, [w], grad=-1.0)  # the same step from small weights is taken
    assert bool(torch.isfinite(w).all()) and float(w.detach()[0]) > 1e306


# ---------------------------------------------------------------------------------------------
# Parameters of every dtype


@pytest.mark.parametrize("cls", list(SPECS))
def test_zero_size_parameters_are_skipped(cls):
    empty = torch.nn.Parameter(torch.zeros(0, 3, dtype=torch.float64))
    w = parameter(cls)
    optimizer = make(cls, [empty, w])
    take_a_step(optimizer, [empty, w])
    assert empty.shape == (0, 3) and len(optimizer.state[empty]) == 0
    assert not torch.equal(w.detach(), torch.ones_like(w))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("cls", list(SPECS))
def test_half_precision_parameters_are_stepped_in_float32(cls, dtype):
    """The step of a float16/bfloat16 parameter is the float32 step rounded; its dual
    iterate or momentum is float32 (one of float16 would drop small steps); MirrorDescent's
    copy of w is of the values written, in the parameter's dtype."""
    generator = torch.Generator().manual_seed(0)
    shape = (2, 2) if cls is SpectralDescent else (4,)
    start = torch.rand(shape, generator=generator) + 0.5
    grads = [torch.randn(shape, generator=generator)]
    half = torch.nn.Parameter(start.to(dtype))
    full = torch.nn.Parameter(start.to(dtype).float())
    optimizers = [make(cls, [half]), make(cls, [full])]
    half.grad, full.grad = grads[0].to(dtype), grads[0].to(dtype).float()
    for optimizer in optimizers:
        optimizer.step(lambda: torch.tensor(2.0))
    assert half.dtype == dtype and torch.equal(half.detach(), full.detach().to(dtype))
    assert not torch.equal(half.detach(), start.to(dtype))
    for key, value in optimizers[0].state[half].items():
        if key == "weight":
            assert value.dtype == dtype and torch.equal(value, half.detach())
        else:
            assert value.dtype == torch.float32


def test_a_half_precision_result_beyond_the_range_is_refused():
    w = torch.nn.Parameter(torch.tensor([65000.0, 1.0], dtype=torch.float16))
    before = w.detach().clone()
    optimizer = NormalizedGD([w], lr=1000.0)
    w.grad = torch.tensor([-1.0, 0.0], dtype=torch.float16)
    with pytest.raises(FloatingPointError, match="leaves float16's range"):
        optimizer.step()
    assert torch.equal(w.detach(), before)


@pytest.mark.parametrize("cls", list(SPECS))
def test_complex_parameters_are_refused_by_name(cls):
    shape = (2, 2) if cls is SpectralDescent else (3,)
    z = torch.nn.Parameter(torch.ones(shape, dtype=torch.complex64))
    message = rf"{cls.__name__}: parameter 0 of group 0 is complex64; .* real floating"
    with pytest.raises(TypeError, match=message):
        make(cls, [z])
    optimizer = make(cls, [parameter(cls)])
    with pytest.raises(TypeError, match="parameter 0 of group 1 is complex64"):
        optimizer.add_param_group({"params": [z]})
    assert len(optimizer.param_groups) == 1
    w = optimizer.param_groups[0]["params"][0]
    w.data = w.data.to(torch.complex128)  # changed after the optimiser was built
    w.grad = torch.ones_like(w)
    with pytest.raises(TypeError, match="parameter 0 of group 0 is complex128"):
        optimizer.step(lambda: torch.tensor(1.0))


def test_spectral_descent_refuses_a_vector_added_later():
    optimizer = SpectralDescent([parameter(SpectralDescent)], lr=0.1)
    with pytest.raises(ValueError, match=r"parameter 0 of group 1 has shape \(3,\)"):
        optimizer.add_param_group({"params": [torch.nn.Parameter(torch.ones(3))]})


# ---------------------------------------------------------------------------------------------
# Property-based: any accepted configuration steps to finite values, any other is refused


def scalars(low, high):
    """Numbers in [low, high] (log-uniform magnitudes), and values of every wrong kind."""
    return st.one_of(
        st.floats(low, high),
        st.floats(-high, high),
        st.integers(-3, 3),
        st.sampled_from([NAN, INF, -INF, True, False, None, "1", [1.0]]),
        st.floats(low, high).map(lambda x: torch.tensor(x, dtype=torch.float64)),
    )


HYPER = {
    MirrorDescent: dict(
        lr=scalars(1e-8, 1e3), p=scalars(1.0, 60.0),
        normalize=st.sampled_from([False, True, None, "per_tensor", "global", "l1", 1]),
    ),
    NormalizedGD: dict(lr=scalars(1e-8, 1e3), momentum=scalars(0.0, 1.0),
                       normalize=st.sampled_from(["global", "per_tensor", "l2", None, True])),
    PolyakStep: dict(lr=scalars(1e-8, 1e3), f_star=scalars(0.0, 1.0), c=scalars(1e-3, 10.0)),
    SignGD: dict(lr=scalars(1e-8, 1e3), momentum=scalars(0.0, 1.0)),
    SpectralDescent: dict(lr=scalars(1e-8, 1e3), momentum=scalars(0.0, 1.0),
                          method=st.sampled_from(["svd", "newton-schulz", "qr", 2])),
    SteepestDescent: dict(lr=scalars(1e-8, 1e3), momentum=scalars(0.0, 1.0),
                          norm=st.one_of(scalars(1.0, 60.0), st.just(INF))),
}  # fmt: skip


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def accepted(cls, key, x) -> bool:
    """Whether the documented rules accept `x` for `key` (written from the docstrings, not the
    code)."""
    if key == "lr":
        if isinstance(x, torch.Tensor):
            x = x.item() if x.numel() == 1 and not x.is_complex() else None
        return is_number(x) and math.isfinite(x) and x > 0
    if key == "p":
        return is_number(x) and math.isfinite(x) and x > 1
    if key == "norm" and cls is SteepestDescent:
        return is_number(x) and not math.isnan(x) and x > 1
    if key == "momentum":
        return is_number(x) and 0 <= x < 1
    if key == "c":
        return is_number(x) and math.isfinite(x) and x > 0
    if key == "f_star":
        return is_number(x) and math.isfinite(x)
    if key == "normalize" and cls is NormalizedGD:  # always normalizes
        return x is True or x in ("per_tensor", "global")
    if key == "normalize":
        return x is False or x is True or x is None or x in ("per_tensor", "global")
    if key == "maximize":
        return isinstance(x, bool)
    options = {"method": ("svd", "newton-schulz")}[key]
    return isinstance(x, str) and x in options


@st.composite
def configurations(draw, cls):
    """Constructor arguments and up to three param groups, each overriding some of them."""
    strategies = HYPER[cls]
    arguments = {key: draw(strategy) for key, strategy in strategies.items()}
    arguments["maximize"] = draw(st.booleans())
    groups = [
        {key: draw(strategies[key]) for key in draw(st.sets(st.sampled_from(sorted(strategies))))}
        for _ in range(draw(st.integers(1, 3)))
    ]
    weights = [
        draw(st.lists(st.floats(-10, 10), min_size=4, max_size=4)) for _ in range(len(groups))
    ]
    gradients = [
        draw(st.lists(st.floats(-1e3, 1e3), min_size=4, max_size=4)) for _ in range(len(groups))
    ]
    return arguments, groups, weights, gradients


def fits_float64(arguments, group, w, g) -> bool:
    """Whether ℓp mirror descent's exact step from w fits in float64 (p ≠ 2 can leave it)."""
    p, lr = float(group.get("p", arguments["p"])), float(group.get("lr", arguments["lr"]))
    normalize = group.get("normalize", arguments["normalize"]) not in (False, None)
    if p == 2.0:
        return True
    exact = exact_step(torch.tensor(w), torch.tensor(g), lr, p, normalize)
    return all(abs(e[0]) <= torch.finfo(torch.float64).max for e in exact)


@pytest.mark.parametrize("cls", list(SPECS), ids=lambda cls: cls.__name__)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_any_configuration_is_refused_or_steps_to_finite_values(cls, data):
    arguments, groups, weights, gradients = data.draw(configurations(cls))
    effective = [{**arguments, **group} for group in groups]
    valid = all(accepted(cls, k, v) for group in [arguments, *effective] for k, v in group.items())
    shape = (2, 2) if cls is SpectralDescent else (4,)
    params = [
        torch.nn.Parameter(torch.tensor(w, dtype=torch.float64).reshape(shape)) for w in weights
    ]
    spelled = dict(arguments)

    def build():
        return cls([{"params": [w], **group} for w, group in zip(params, groups)], **spelled)

    if not valid:
        with pytest.raises((TypeError, ValueError)):
            build()
        return
    optimizer = build()
    for w, g in zip(params, gradients):
        w.grad = torch.tensor(g, dtype=torch.float64).reshape(shape)
    before = [w.detach().clone() for w in params]
    try:
        optimizer.step(lambda: torch.tensor(1.0, dtype=torch.float64))
    except FloatingPointError:  # only where the exact result leaves float64
        assert cls is MirrorDescent
        assert not all(fits_float64(arguments, *case) for case in zip(groups, weights, gradients))
        assert all(torch.equal(w.detach(), b) for w, b in zip(params, before))
        return
    assert all(bool(torch.isfinite(w).all()) for w in params)


@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("f_star", [0.0, 1.0])
def test_polyak_with_a_zero_gradient_takes_no_step(maximize, f_star):
    """‖g‖ = 0 with L − L* ≤ 0 (L = L*, or −L below L* under maximize) made the divisor
    0·(0/0) = NaN, and the step NaN (found by the property test above)."""
    w = torch.nn.Parameter(torch.zeros(4, dtype=torch.float64))
    optimizer = PolyakStep([w], lr=1.0, f_star=f_star, maximize=maximize)
    w.grad = torch.zeros(4, dtype=torch.float64)
    optimizer.step(lambda: torch.tensor(1.0, dtype=torch.float64))
    assert torch.equal(w.detach(), torch.zeros(4, dtype=torch.float64))
