"""What a step of a small model costs in torch operator calls (issue 31, goal 4: a step on a
50 k-parameter layer is per-call overhead, not arithmetic), and that the cheaper paths are the
same steps bit for bit."""

from __future__ import annotations

import math

import mpmath
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attnbias.norms import lp_norm
from attnbias.optim import (
    MirrorDescent,
    NormalizedGD,
    PolyakStep,
    SignGD,
    divisors,
    guards,
    multi_tensor,
)


class OperatorCount(TorchDispatchMode):
    """Counts the torch operators called (those that reach the dispatcher from Python)."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def small_layer() -> list[torch.nn.Parameter]:
    """A width-64 encoder layer (49,984 parameters in 12 tensors) with gradients."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, batch_first=True)
    layer(torch.randn(2, 5, 64)).square().mean().backward()
    return list(layer.parameters())


# Operator calls a step made before the quick paths of issue 31 → the most allowed now:
# NormalizedGD 116, PolyakStep 140, SignGD 106, ℓ1.1 mirror descent 199. Then SignGD 83 → 59
# (its finiteness check stacks the 0-d maxima as they are: 24 fewer reshapes and indexings) and
# ℓ1.1 mirror descent 112 → 63 (its plain step without the run axis of w, θ, g and the copy of
# w: 48 fewer `unsqueeze`). Normalised ℓ1.1 mirror descent ("global" / "per_tensor") 342 / 326
# → 127 / 146: its ℓ11 norms in torch._foreach_* kernels (`norms.scaled_norms_foreach`), the
# one-pass step likewise and without the run axis, the global factor taken once (not per tensor).
# Then "global" 127 → 100: the group's ℓ11 norm over all its entries at once in a flat buffer
# (`divisors.whole_group_norm`), not each tensor's norm and then the norm of those. And ℓ1.1
# mirror descent 63 → 50 (normalised 100 → 85): the comparison of w with its copy detaches
# only what numpy reads (`duals.dual_iterates`), not every tensor twice. Then ℓ1.1 mirror
# descent 50 → 18 (measured 16) and normalised 85 → 32 (measured 30): θ and the copy of w as
# one flat buffer each per group (`optim.flat_duals`), one kernel an operation for all tensors,
# and the one global factor D/η read and divided on the host (`divisors.quick_factors`).
MOST_CALLS = {
    "NormalizedGD": (lambda ps: NormalizedGD(ps, lr=1e-3), 60),
    "PolyakStep": (lambda ps: PolyakStep(ps, lr=1e-3), 100),
    "SignGD": (lambda ps: SignGD(ps, lr=1e-3), 70),
    "MirrorDescent p=1.1": (lambda ps: MirrorDescent(ps, lr=1e-3, p=1.1), 18),
    "MirrorDescent p=1.1 normalized": (
        lambda ps: MirrorDescent(ps, lr=1e-3, p=1.1, normalize=True),
        32,
    ),
    "MirrorDescent p=1.1 per tensor": (
        lambda ps: MirrorDescent(ps, lr=1e-3, p=1.1, normalize="per_tensor"),
        150,
    ),
}


@pytest.mark.parametrize("name", sorted(MOST_CALLS))
def test_a_small_models_step_makes_few_operator_calls(name):
    make, most = MOST_CALLS[name]
    params = small_layer()
    optimizer = make(params)
    loss = torch.tensor(1.0)
    optimizer.step(lambda: loss)  # state built
    with OperatorCount() as count:
        optimizer.step(lambda: loss)
    assert count.calls <= most, f"{name}: {count.calls} operator calls"


NORMS = [
    [3.0, 4.0, 0.0],
    [0.0, 0.0],
    [1e-300, 3e-310, 2e-300],
    [1e300, 1e300, 5e299],
    [1.7e308, 1.7e308],
    [2.5],
    [math.nan, 1.0],
    [math.inf, 1.0],
    [math.inf, math.nan],
    [0.1 * k for k in range(1, 40)],
]


@pytest.mark.parametrize("values", NORMS)
def test_the_global_norm_read_on_the_host_is_lp_norm_bit_for_bit(values):
    norms = torch.tensor(values, dtype=torch.float64)
    expected = lp_norm(norms).reshape(1)
    sizes, each, totals = divisors.global_two_norm(norms)
    assert sizes.dtype == torch.float64 and sizes.shape == (1,)
    assert torch.equal(sizes, expected) or (sizes.isnan().all() and expected.isnan().all())
    assert each == norms.tolist() or any(math.isnan(v) for v in values)
    assert totals == sizes.tolist() or math.isnan(totals[0])


def test_random_global_norms_are_lp_norm_bit_for_bit():
    generator = torch.Generator().manual_seed(3)
    for _ in range(200):
        k = int(torch.randint(1, 30, (1,), generator=generator))
        scale = 10.0 ** float(torch.empty(1).uniform_(-300, 300, generator=generator))
        norms = torch.rand(k, generator=generator, dtype=torch.float64) * scale
        assert torch.equal(divisors.global_two_norm(norms)[0], lp_norm(norms).reshape(1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_one_divisor_on_the_host_gives_the_tensors_factor_bit_for_bit(dtype):
    """`divisors.quick_factors` of one CPU divisor divides on the host: the factor that the
    float64 tensor division and the cast into the dtype give, at every scale, and None where
    the quotient is not a normal number."""
    generator = torch.Generator().manual_seed(13)
    info = torch.finfo(dtype)
    for _ in range(2000):
        size = float(torch.rand(1, generator=generator)) * 10.0 ** int(
            torch.randint(-30, 30, (1,), generator=generator)
        )
        eta = float(torch.rand(1, generator=generator)) * 10.0 ** int(
            torch.randint(-40, 10, (1,), generator=generator)
        )
        d = torch.tensor([size], dtype=dtype)
        factors = divisors.quick_factors("x", [d] * 3, eta, "the gradient norm")
        expected = (torch.stack([d[0]]).double() / eta).to(dtype).view(-1, 1)[0]
        quotient = float(d) / eta
        if 2 * info.tiny <= quotient <= info.max / 2:
            assert all(f is factors[0] for f in factors) and factors[0].shape == (1,)
            assert factors[0].dtype == dtype and torch.equal(factors[0], expected)
        else:
            assert factors == [None] * 3
    with pytest.raises(FloatingPointError, match="gradient norm"):
        divisors.quick_factors(
            "x", [torch.tensor([math.inf], dtype=dtype)], 0.1, "the gradient norm"
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [1.1, 1.5])
def test_a_small_group_on_the_cpu_takes_the_foreach_step_bit_for_bit(p, dtype, monkeypatch):
    """Plain mirror descent of a small CPU group steps in torch._foreach_* calls: the same
    weights and dual iterates as the per-tensor loop, edits between steps included."""

    def three_steps():
        generator = torch.Generator().manual_seed(5)
        params = [
            torch.nn.Parameter(torch.randn(shape, generator=generator, dtype=dtype))
            for shape in [(30, 7), (7,), (5000,)]
        ]
        optimizer = MirrorDescent(params, lr=0.05, p=p)
        for step in range(3):
            for w in params:
                w.grad = torch.randn(w.shape, generator=generator, dtype=dtype)
            if step == 2:
                params[0].data[0] = 0.25
            optimizer.step()
        return [w.detach().clone() for w in params], [optimizer.state[w]["dual"] for w in params]

    fused = three_steps()
    monkeypatch.setattr(multi_tensor, "SMALL_GROUP", 0)
    loop = three_steps()
    for a, b in zip(fused[0] + fused[1], loop[0] + loop[1]):
        assert torch.equal(a, b)


def group_at_scales(scales: list[float], dtype: torch.dtype) -> list[torch.Tensor]:
    """One run's gradients (with the run axis), a tensor at each scale; a few zero entries."""
    generator = torch.Generator().manual_seed(len(scales))
    shapes = [(1, 64, 32), (1, 300), (1, 7), (1, 16, 16)]
    grads = [
        torch.randn(shape, generator=generator, dtype=torch.float64) * scale
        for shape, scale in zip(shapes, scales)
    ]
    grads[0][0, 3, :5] = 0.0
    return [g.to(dtype) for g in grads]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [1.1, 1.5, 3.0])
@pytest.mark.parametrize(
    "scales",
    [[1.0, 1.0, 1.0, 1.0], [1e-30, 1e-30, 1e-31, 1e-29], [1e30, 1e-30, 1.0, 1e-3], [1e-41, 1e-42]],
)
def test_the_global_norm_of_a_small_group_is_the_norm_of_all_its_entries(dtype, p, scales):
    """`whole_group_norm` (a small CPU group's "global" divisor: one scaled norm of all the
    entries) against the ℓq norm of the entries in float64 arithmetic (float32 groups) or
    40-digit arithmetic (float64 groups), at any scale: tiny, huge, and 60 decades apart
    within one group (float32 subnormals too). Bound, from the operations (u = eps/2): the
    division by the largest entry (u) raised to q ≤ 11 by binary powering ((q − 1)u + q·u),
    the cascade sum (≤ 16u at these sizes), all shrunk q-fold by the 1/q-th power, then
    that power and the product by the maximum (2u): under 6u = 3 eps; and where the norm is
    subnormal, the product's rounding to the subnormal spacing (the smallest positive number)."""
    if dtype == torch.float32 and scales == [1e30, 1e-30, 1.0, 1e-3]:
        scales = [1e30, 1e-8, 1.0, 1e-3]  # (float32 holds 1e-30 · N(0, 1) as subnormals)
    grads = group_at_scales(scales, dtype)
    q = 1.0 / (1.0 - 1.0 / p)
    assert divisors.takes_whole_group_norm(grads)
    got = float(divisors.whole_group_norm(grads, q, multi_tensor.ScratchSpace()))
    entries = torch.cat([g.reshape(-1) for g in grads]).double()
    if dtype == torch.float64:
        mpmath.mp.dps = 40
        top = max(abs(mpmath.mpf(float(x))) for x in entries)
        total = mpmath.fsum((abs(mpmath.mpf(float(x))) / top) ** q for x in entries)
        exact = float(top * total ** (1 / mpmath.mpf(q)))
    else:
        exact = float(lp_norm(entries, q))
    assert exact > 0
    info = torch.finfo(dtype)
    assert abs(got - exact) <= 3 * info.eps * exact + info.tiny * info.eps, (got, exact)


def test_the_global_norm_of_a_small_group_keeps_its_refusals_and_its_zero():
    """A NaN or infinite gradient: FloatingPointError naming the parameter, nothing changed;
    a zero gradient: no step (D = 0), as before the whole-group norm."""
    params = [torch.nn.Parameter(torch.ones(3, 4)), torch.nn.Parameter(torch.ones(5))]
    for bad in (math.nan, math.inf):
        for w in params:
            w.grad = torch.ones_like(w)
        params[1].grad[2] = bad
        optimizer = MirrorDescent(params, lr=0.1, p=1.1, normalize=True)
        with pytest.raises(FloatingPointError, match=r"parameter 1 of group 0 \(shape \(5,\)\)"):
            optimizer.step()
        assert all(torch.equal(w, torch.ones_like(w)) for w in params)
    for w in params:
        w.grad = torch.zeros_like(w)
    MirrorDescent(params, lr=0.1, p=1.1, normalize=True).step()
    assert all(torch.equal(w, torch.ones_like(w)) for w in params)


def test_scratch_laid_out_buffers_are_disjoint_and_hold_the_tensors_end_to_end():
    scratch = multi_tensor.ScratchSpace()
    tensors = [torch.full((2, 3), 1.0, dtype=torch.float64), torch.full((4,), 2.0).double()]
    entries, powers, views = scratch.laid_out(tensors)
    assert entries.shape == powers.shape == (10,) and entries.dtype == torch.float64
    torch._foreach_copy_(views, tensors)
    powers.fill_(3.0)
    assert entries.tolist() == [1.0] * 6 + [2.0] * 4
    assert scratch.laid_out(tensors)[2][1].data_ptr() == views[1].data_ptr()  # kept


def test_signgd_refuses_a_nonfinite_gradient_naming_the_parameter():
    params = [torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2, 2))]
    for w in params:
        w.grad = torch.ones_like(w)
    params[1].grad[1, 0] = math.inf
    with pytest.raises(FloatingPointError, match=r"parameter 1 of group 0 \(shape \(2, 2\)\)"):
        SignGD(params, lr=0.1).step()
    assert all(torch.equal(w, torch.ones_like(w)) for w in params)


class OperatorNames(TorchDispatchMode):
    """The names of the torch operators called."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def test_the_largest_entries_of_a_large_group_take_no_temporary_the_size_of_the_group():
    """On the CPU, beyond `SMALL_GROUP` entries, max|g| is one pass over each tensor
    (torch.aminmax) with no |g| written out: on MiniLM that temporary, fresh memory at every
    step, was most of plain mirror descent's step; the values are the multi-tensor path's."""
    generator = torch.Generator().manual_seed(0)
    grads = [torch.randn(700, 1024, generator=generator), torch.randn(600, 1024) * 1e-30]
    grads.append(torch.tensor([-0.0, 0.0, -3e-45], dtype=torch.float32))
    assert sum(g.numel() for g in grads) > multi_tensor.SMALL_GROUP
    with OperatorNames() as seen:
        large = guards.largest_entries(grads)
    assert not [name for name in seen.names if "abs" in name], seen.names
    small = list(torch._foreach_max(torch._foreach_abs(grads)))
    assert all(torch.equal(a, b) for a, b in zip(large, small))
    grads[1][5, 7] = math.nan
    with pytest.raises(FloatingPointError, match="parameter 1 of group 0"):
        guards.largest_magnitudes("X", grads, (0, grads, grads))
