"""The optimisers' quick paths (issue 20, point 2) against the scale-safe computations they
stand in for: ℓ2 norms without the scaling passes, checked once per step and redone by the
scale-safe `lp_norm` where the check fails; the one-pass step t − g/(D/η); small tensors'
ℓq norms taken together; one reduction for the largest gradient entries."""

import math

import numpy as np
import pytest
import torch

from attnbias import norms
from attnbias.norms import unscaled_two_norms
from attnbias.optim import MirrorDescent, NormalizedGD, PolyakStep, duals, guards, multi_tensor
from attnbias.optim import divisors as D
from attnbias.optim import functional as F

pytestmark = pytest.mark.usefixtures("one_thread")

DTYPES = [torch.float32, torch.float64]
# the quick path's norms and steps agree with the scale-safe ones to this many eps of the
# dtype (measured: at most 2.8 over the sizes and distributions below)
NORM_EPS = 4
STEP_EPS = 4


def eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps


def exact_two_norm(x: torch.Tensor) -> float:
    """‖x‖₂ of the values as they are, in 80-bit arithmetic (float64 inputs) or float64."""
    values = x.detach().double().reshape(-1).numpy().astype(np.longdouble)
    return float(np.sqrt(np.sum(values * values)))


def sample(n: int, kind: str, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=generator, dtype=torch.float64)
    if kind == "positive":
        x = x.abs()
    if kind == "heavy":  # entries over a few decades
        x = x.mul(3).exp() * x.sign()
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["normal", "positive", "heavy"])
@pytest.mark.parametrize("n", [1, 7, 1000, 4096, 4097, 100_000, (1 << 20) + 37])
def test_unscaled_two_norms_are_right_to_a_few_eps(n, kind, dtype):
    """Up to NORM_ROWS_ABOVE entries in one reduction, beyond by rows (the last one short
    where the size is not a multiple of NORM_ROW)."""
    x = sample(n, kind, dtype, seed=n)
    got = float(unscaled_two_norms([x])[0].to(dtype))
    want = exact_two_norm(x)
    assert abs(got - want) <= NORM_EPS * eps(dtype) * want


def test_unscaled_two_norms_take_many_shapes_at_once():
    tensors = [
        torch.randn(3, 5),
        torch.randn(1, 2048, 3, dtype=torch.float64),  # rows of NORM_ROW
        torch.randn(300, 40).t(),  # not contiguous
        torch.zeros(0),
        torch.randn(5000),  # a short last row
    ]
    got = unscaled_two_norms(tensors)
    assert got.dtype == torch.float64 and got.shape == (5,)
    for value, x in zip(got.tolist(), tensors):
        assert value == pytest.approx(exact_two_norm(x), rel=NORM_EPS * eps(x.dtype), abs=0)


def as_grads(tensors):
    return [t.unsqueeze(0) for t in tensors]  # the run axis of the functional core


def scale_safe_divisors(grads, normalize):
    return D.divisors(grads, normalize)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("normalize", ["per_tensor", "global"])
def test_quick_divisors_match_the_scale_safe_ones_on_ordinary_gradients(normalize, dtype):
    grads = as_grads([sample(n, "normal", dtype, seed=n) * 1e-3 for n in (5, 384, 70_000)])
    divisors, factors = D.quick_two_norm_divisors("X", grads, normalize, 0.1, "grads")
    want = scale_safe_divisors(grads, normalize)
    for d, w, f in zip(divisors, want, factors):
        assert d.shape == w.shape == (1,) and d.dtype == w.dtype == dtype
        assert float(d) == pytest.approx(float(w), rel=NORM_EPS * eps(dtype), abs=0)
        assert f is not None and float(f) == pytest.approx(float(d) / 0.1, rel=2 * eps(dtype))


def unusual_gradients(dtype):
    """name: gradients whose unscaled squares underflow, overflow or are all zero."""
    small, large = (1e-30, 1e30) if dtype == torch.float32 else (1e-300, 1e300)
    huge_entry = torch.zeros(1000, dtype=dtype)
    huge_entry[17] = large
    return {
        "tiny": sample(5000, "normal", dtype) * small,
        "huge": sample(5000, "normal", dtype) * large,
        "zero": torch.zeros(300, dtype=dtype),
        "one huge entry": huge_entry,
        "subnormal": torch.full((50,), torch.finfo(dtype).tiny / 8, dtype=dtype),
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["tiny", "huge", "zero", "one huge entry", "subnormal"])
def test_quick_divisors_fall_back_to_the_scale_safe_norm(case, dtype):
    """Where the unscaled sum of squares underflows or overflows, the divisor is the
    scale-safe `lp_norm`'s (bit for bit: it is recomputed by it), beside an ordinary tensor
    that keeps its quick norm."""
    ordinary = sample(100, "normal", dtype, seed=3)
    grads = as_grads([unusual_gradients(dtype)[case], ordinary])
    divisors, factors = D.quick_two_norm_divisors("X", grads, "per_tensor", 0.5, "g")
    want = D.gradient_norms(grads[:1], 2.0)[0]
    assert torch.equal(divisors[0], want)
    assert factors[0] is None  # the step divides first, as before
    if case != "zero":
        assert float(divisors[0]) > 0 and math.isfinite(float(divisors[0]))
    assert factors[1] is not None
    assert float(divisors[1]) == pytest.approx(exact_two_norm(ordinary), rel=NORM_EPS * eps(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["tiny", "huge", "one huge entry"])
def test_a_global_norm_falls_back_as_a_whole(case, dtype):
    """(A tensor whose squares underflow beside one whose squares do not is taken quickly:
    its part of the sum is below eps of it.)"""
    cases = unusual_gradients(dtype)
    other = cases["tiny"][:10] if case == "tiny" else sample(10, "normal", dtype)
    grads = as_grads([cases[case], other])
    divisors, factors = D.quick_two_norm_divisors("X", grads, "global", 0.5, "g")
    want = scale_safe_divisors(grads, "global")
    assert all(torch.equal(d, w) for d, w in zip(divisors, want))
    assert factors == [None, None]


def test_a_step_size_that_makes_the_factor_subnormal_takes_the_two_pass_step():
    grads = as_grads([sample(100, "normal", torch.float32)])
    _, factors = D.quick_two_norm_divisors("X", grads, "per_tensor", 1e39, "g")
    assert factors == [None]  # ‖g‖/η ≈ 1e-38: below twice the smallest normal number


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("normalize", ["per_tensor", "global"])
def test_a_nonfinite_gradient_is_refused_naming_the_parameter(normalize, bad):
    tensors = [torch.randn(4), torch.randn(6, 5)]
    tensors[1][2, 3] = bad
    culprit = (0, [torch.empty(4), torch.empty(6, 5)], tensors)
    with pytest.raises(FloatingPointError, match=r"parameter 1 of group 0 \(shape \(6, 5\)\)"):
        D.quick_two_norm_divisors("X", as_grads(tensors), normalize, 0.1, culprit)
    with pytest.raises(FloatingPointError, match=r"parameter 1 of group 0"):
        D.quick_factors("X", D.divisors(as_grads(tensors), normalize), 0.1, culprit)


@pytest.mark.parametrize("p", [2.0, 1.5, 1.1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_one_pass_step_is_the_two_pass_step_bit_for_bit(dtype, p):
    """`F.step_` with η = 1 takes t − g/D with addcdiv; a tensor η = 1 takes g/D, then
    t − η·(g/D): the same roundings."""
    w = sample(3000, "normal", dtype, seed=1).view(1, 30, 100)
    g = sample(3000, "normal", dtype, seed=2).view(1, 30, 100)
    d = torch.tensor([7.25], dtype=dtype)
    results = []
    for lr in (1.0, torch.tensor(1.0, dtype=dtype)):
        w_k = w.clone()
        duals = None if p == 2.0 else [norms.mirror_map(w_k, p)]
        F.step_([w_k], [g], [d], lr, p=p, duals=duals)
        results.append((w_k, duals))
    assert torch.equal(results[0][0], results[1][0])
    if p != 2.0:
        assert torch.equal(results[0][1][0], results[1][1][0])


def scale_safe_path(monkeypatch):
    """Every quick norm rejected and no factor taken: the steps as before the quick path."""
    monkeypatch.setattr(D, "underflow_floor", lambda numel, dtype: math.inf)
    monkeypatch.setattr(D, "normal_number", lambda value, dtype: False)


OPTIMIZERS = {
    "SNGD": lambda ps: NormalizedGD(ps, lr=0.1),
    "SNGD per tensor": lambda ps: NormalizedGD(ps, lr=0.1, normalize="per_tensor"),
    "SPS": lambda ps: PolyakStep(ps, lr=0.1, c=0.5),
    "NGD via MD": lambda ps: MirrorDescent(ps, lr=0.1, p=2.0, normalize="per_tensor"),
    "MD-1.1 normalized": lambda ps: MirrorDescent(ps, lr=0.05, p=1.1, normalize="per_tensor"),
    "MD-1.5 global": lambda ps: MirrorDescent(ps, lr=0.05, p=1.5, normalize="global"),
    "MD-1.1": lambda ps: MirrorDescent(ps, lr=0.05, p=1.1),
    "SGD via MD": lambda ps: MirrorDescent(ps, lr=0.05),
}


def initial_weights(dtype):
    torch.manual_seed(0)
    return [torch.randn(*shape, dtype=dtype) for shape in [(30, 70), (5,), (7000,)]]


def three_steps(make, dtype, scale=1.0, foreach=None):
    params = [torch.nn.Parameter(w) for w in initial_weights(dtype)]
    opt = make(params)
    if foreach is not None:
        for group in opt.param_groups:
            group["foreach"] = foreach
    generator = torch.Generator().manual_seed(1)
    for _ in range(3):
        for w in params:
            w.grad = torch.randn(w.shape, generator=generator, dtype=torch.float64).to(dtype)
            w.grad *= scale
        opt.step(lambda: torch.tensor(2.0, dtype=dtype))
    return [w.detach().clone() for w in params]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_quick_steps_match_the_scale_safe_steps(name, dtype, monkeypatch):
    """Three steps of each optimiser on ordinary gradients: the weights agree normwise to
    STEP_EPS eps of the dtype with those of the steps as they were before the quick path,
    times the condition number 1/(p − 1) of the inverse mirror map for p < 2 (a rounding of
    θ is amplified that much in w = |θ|^{1/(p−1)})."""
    quick = three_steps(OPTIMIZERS[name], dtype)
    scale_safe_path(monkeypatch)
    safe = three_steps(OPTIMIZERS[name], dtype)
    p = {"MD-1.1": 1.1, "MD-1.5": 1.5}.get(name[:6], 2.0)
    bound = STEP_EPS * eps(dtype) / min(1.0, p - 1.0)
    for a, b in zip(quick, safe):
        assert float((a - b).abs().max()) <= bound * float(b.abs().max()), name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", ["tiny", "huge"])
@pytest.mark.parametrize("name", ["SNGD", "SNGD per tensor", "NGD via MD", "SPS"])
def test_steps_on_gradients_the_quick_norm_cannot_take_are_the_scale_safe_steps(
    name, scale, dtype, monkeypatch
):
    """Gradients of 1e-30/1e30 (float32), 1e-300/1e300 (float64): the quick norms are
    rejected, and the steps are those of the scale-safe path, bit for bit, and move."""
    factor = {"tiny": 1e-30, "huge": 1e30}[scale]
    if dtype == torch.float64:
        factor **= 10
    quick = three_steps(OPTIMIZERS[name], dtype, factor)
    scale_safe_path(monkeypatch)
    safe = three_steps(OPTIMIZERS[name], dtype, factor)
    assert all(torch.equal(a, b) for a, b in zip(quick, safe))
    if name != "SPS":  # (Polyak's step is η‖g‖ ≤ L/(c‖g‖): nothing at 1e30)
        assert all(not torch.equal(a, b) for a, b in zip(quick, initial_weights(dtype)))


@pytest.mark.parametrize("name", ["SNGD", "SNGD per tensor", "NGD via MD", "SPS"])
def test_quick_steps_are_the_same_with_and_without_foreach(name):
    loop = three_steps(OPTIMIZERS[name], torch.float32, foreach=False)
    fused = three_steps(OPTIMIZERS[name], torch.float32, foreach=True)
    assert all(torch.equal(a, b) for a, b in zip(loop, fused))


@pytest.mark.parametrize("q", [11.0, 3.0, 1.5, 2.0])
@pytest.mark.parametrize("dtype", DTYPES)
def test_small_tensors_norms_taken_together_are_their_own(dtype, q):
    """Rows padded with zeros: the scale-safe norm of each tensor, to its rounding; zero,
    tiny and huge tensors included, and the large ones as `D.gradient_norms` takes them."""
    small, large = (1e-30, 1e30) if dtype == torch.float32 else (1e-300, 1e300)
    tensors = [
        sample(7, "normal", dtype),
        sample(384, "heavy", dtype) * small,
        torch.zeros(30, dtype=dtype),
        sample(1536, "normal", dtype) * large,
        sample(9000, "normal", dtype),
    ]
    grads = as_grads(tensors)
    got = D.grouped_gradient_norms(grads, q, multi_tensor.ScratchSpace())
    want = D.gradient_norms(grads, q)
    for a, b in zip(got, want):
        assert a.shape == b.shape == (1,) and a.dtype == b.dtype
        assert float(a) == pytest.approx(float(b), rel=NORM_EPS * eps(dtype), abs=0)
    assert float(got[2]) == 0.0 and float(got[1]) > 0 and math.isfinite(float(got[3]))
    nan = [t.clone() for t in tensors]
    nan[1][5] = float("nan")
    assert math.isnan(
        float(D.grouped_gradient_norms(as_grads(nan), q, multi_tensor.ScratchSpace())[1])
    )


def test_largest_magnitudes_are_exact_and_refuse_nonfinite_entries():
    tensors = [torch.tensor([1.0, -3.0, 2.0]), torch.zeros(0), torch.tensor([[0.5], [-0.25]])]
    assert guards.largest_magnitudes("X", tensors, "g") == [3.0, 0.0, 0.5]
    tensors[2][1, 0] = float("inf")
    with pytest.raises(FloatingPointError, match="g is NaN or infinite"):
        guards.largest_magnitudes("X", tensors, "g")


def test_workspace_views_lie_in_the_current_buffer():
    """Views are handed out again for the same shapes, and rebuilt once the buffer grew."""
    workspace = multi_tensor.ScratchSpace()
    a = [torch.empty(10)]
    first = workspace.views(a, 2)
    assert workspace.views(a, 2) is first
    workspace.views([torch.empty(100)], 1)  # grows the buffer
    again = workspace.views(a, 2)
    (buffer,) = workspace.buffers.values()
    start, end = buffer.data_ptr(), buffer.data_ptr() + buffer.numel() * 4
    assert all(start <= v.data_ptr() < end for pair in again for v in pair)
    assert again[0][0].data_ptr() != again[0][1].data_ptr()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("normalize", ["per_tensor", "global"])
def test_quick_divisors_under_torch_default_float32(normalize, dtype, float32_one_thread):
    """The suite's default dtype is float64; a user's is float32. A constant built without a
    dtype then is float32 (float64's largest number overflowed it in the global case)."""
    grads = as_grads([sample(n, "normal", dtype, seed=n) * 1e-3 for n in (5, 384, 70_000)])
    divisors, _ = D.quick_two_norm_divisors("X", grads, normalize, 0.1, "grads")
    for d, w in zip(divisors, scale_safe_divisors(grads, normalize)):
        assert d.dtype == w.dtype == dtype
        assert float(d) == pytest.approx(float(w), rel=NORM_EPS * eps(dtype), abs=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_global_normalized_step_under_torch_default_float32(dtype, float32_one_thread):
    w = torch.nn.Parameter(torch.tensor([[3.0, -4.0]], dtype=dtype))
    w.grad = torch.tensor([[0.3, 0.4]], dtype=dtype)
    NormalizedGD([w], lr=0.5, normalize="global").step()
    want = torch.tensor([[3.0 - 0.5 * 0.6, -4.0 - 0.5 * 0.8]], dtype=dtype)
    assert torch.allclose(w.detach(), want, rtol=4 * eps(dtype), atol=0)


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_same_values_each_is_torch_equal_of_each_pair(device):
    """One host synchronisation for all pairs on a GPU, and torch.equal's answers: NaN differs
    from itself, 0 equals −0, empty tensors are equal."""
    nan = float("nan")

    def t(*values):
        return torch.tensor(values, device=device)

    pairs = [
        (t(1.0, 2.0), t(1.0, 2.0)),
        (t(1.0, 2.0), t(1.0, 3.0)),
        (t(nan), t(nan)),
        (t(0.0), t(-0.0)),
        (torch.empty(0, device=device), torch.empty(0, device=device)),
    ]
    expected = [torch.equal(a, b) for a, b in pairs]
    assert expected == [True, False, False, True, True]
    assert duals.same_values_each(pairs) == expected


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns (so that −0 ≠ 0 and NaNs compare)."""
    return t.view({torch.float32: torch.int32, torch.float64: torch.int64}[t.dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [1.1, 1.25, 1.5, 1.75, 4 / 3])
def test_plain_mirror_steps_are_the_same_bits_with_and_without_foreach(p, dtype, device):
    """Plain ℓp-MD, p < 2: the foreach path (one kernel an operation for all tensors on a
    GPU) is the per-tensor step bit for bit — zero weights' signs included — also after the
    user edits a weight between steps (θ is rebuilt there) and with a zero gradient."""
    out = {}
    for foreach in (False, True):
        params = [torch.nn.Parameter(w.to(device)) for w in initial_weights(dtype)]
        params[1].data[0] = 0.0
        opt = MirrorDescent(params, lr=0.05, p=p, foreach=foreach)
        generator = torch.Generator().manual_seed(1)
        for step in range(3):
            for w in params:
                grad = torch.randn(w.shape, generator=generator, dtype=torch.float64)
                w.grad = grad.to(dtype=dtype, device=device)
            params[0].grad[0] = 0.0
            opt.step()
            if step == 0:
                params[2].data[5] = -3.0  # an edit the next step must honour
        out[foreach] = [bits(w.detach().cpu()) for w in params]
    assert all(torch.equal(a, b) for a, b in zip(out[False], out[True]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [1.01, 1.1, 1.2, 1.25, 4 / 3, 1.5, 1.75, 2.0, 2.5, 3.0])
def test_the_foreach_inverse_mirror_map_is_the_per_tensor_one_bit_for_bit(p, dtype):
    torch.manual_seed(0)
    special = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-30, -7.5], dtype=dtype)
    thetas = [torch.randn(7, 5, dtype=dtype) * s for s in (1e-3, 1.0, 30.0)] + [special]
    outs = [torch.empty_like(t) for t in thetas]
    norms.inverse_mirror_map_foreach_(thetas, p, outs)
    for theta, w in zip(thetas, outs):
        assert torch.equal(bits(w), bits(norms.inverse_mirror_map(theta, p)))


@pytest.mark.parametrize("normalize", ["global", "per_tensor"])
def test_foreach_steps_of_a_group_of_two_dtypes_are_the_per_tensor_steps(normalize):
    """A float32 and a float64 tensor in one group: "global" divides both by one float64 norm
    (in float64 for the float32 tensor); the foreach path must not round that norm to float32
    first."""

    def run(foreach):
        g = torch.Generator().manual_seed(3)
        a = torch.nn.Parameter(torch.randn(50, 7, generator=g, dtype=torch.float32))
        b = torch.nn.Parameter(torch.randn(9, generator=g, dtype=torch.float64))
        opt = NormalizedGD([a, b], lr=0.1, normalize=normalize, foreach=foreach)
        a.grad = torch.randn(a.shape, generator=g, dtype=torch.float32) * 1.37
        b.grad = torch.randn(b.shape, generator=g, dtype=torch.float64)
        opt.step()
        return [bits(w.detach()) for w in (a, b)]

    assert all(torch.equal(x, y) for x, y in zip(run(False), run(True)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [1.1, 1.5, 4 / 3])
def test_one_pass_mirror_steps_are_the_same_bits_with_and_without_foreach(p, dtype):
    """Normalised ℓp-MD's one pass θ − g/(D/η) (divisors D/η, η = 1): the foreach path is
    the per-tensor loop bit for bit, a zero divisor (no step) and a float64 divisor of
    float32 tensors ("global") included."""
    out = {}
    for foreach in (False, True):
        weights = as_grads(initial_weights(dtype))
        generator = torch.Generator().manual_seed(2)
        grads = [torch.randn(w.shape, generator=generator, dtype=dtype) for w in weights]
        grads[1].zero_()
        factors = [torch.tensor([7.5], dtype=dtype), torch.zeros(1, dtype=dtype)]
        factors.append(torch.tensor([123.25], dtype=torch.float64))
        thetas = [norms.mirror_map(w, p) for w in weights]
        F.step_(weights, grads, factors, 1.0, p=p, duals=thetas, foreach=foreach)
        out[foreach] = [bits(t) for t in weights + thetas]
    assert all(torch.equal(a, b) for a, b in zip(out[False], out[True]))
