"""PolyakStep on the CPU computes its divisor from numbers on the host (issue 31, goal 4: a
dozen operator calls on one-element tensors were a fifth of a small model's step): the same
number as `polyak_divisor`'s bit for bit, and so the same steps."""

from __future__ import annotations

import copy
import functools
import itertools
import math

import numpy as np
import pytest
import torch

from attnbias.optim import PolyakStep, divisors, polyak
from test_optim_step_cost import OperatorCount, small_layer

SPECIAL = [0.0, 5e-324, 1e-45, 1e-30, 0.1, 1.0, 3.0, 1e30, 1e300, math.inf, math.nan]


def tensor_divisor(norm, loss, f_star, c, cap, dtype) -> float:
    as_one = lambda x: torch.tensor([x], dtype=dtype)  # noqa: E731
    return divisors.polyak_divisor(as_one(norm), as_one(loss), f_star, c, cap).item()


def same(a: float, b: float) -> bool:
    """Equal bit for bit (−0.0 is not 0.0), or both NaN."""
    both_nan = math.isnan(a) and math.isnan(b)
    return both_nan or np.float64(a).tobytes() == np.float64(b).tobytes()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_host_divisor_is_the_tensor_divisor_bit_for_bit(dtype):
    rng = np.random.default_rng(0)
    cases = [
        (*values, 0.1, 0.7, 1e-3)
        for values in itertools.product(SPECIAL, [0.0, -1.0, 0.3, 1e-40, 7.0, math.inf])
    ]
    cases += [(n, 0.0, 0.0, 1.0, 1.0) for n in SPECIAL]
    for _ in range(3000):  # values spread over many binades; hyper-parameters not in float32
        norm, loss = 10.0 ** rng.uniform(-40, 40, 2) * rng.uniform(0.5, 1.0, 2)
        f_star, c, cap = rng.uniform(-1, 1), 10.0 ** rng.uniform(-3, 3), 10.0 ** rng.uniform(-5, 1)
        cases.append((float(norm), float(loss), float(f_star), float(c), float(cap)))
    for case in cases:
        host = divisors.polyak_divisor_of_numbers(*case, dtype)
        assert same(host, tensor_divisor(*case, dtype)), case


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("maximize", [False, True])
def test_polyak_steps_on_the_cpu_are_the_tensor_path_steps_bit_for_bit(
    dtype, maximize, monkeypatch
):
    params = [p.detach().to(dtype).requires_grad_() for p in small_layer()]
    grads = [p.grad.to(dtype) for p in small_layer()]
    twin = copy.deepcopy(params)
    for w, g in zip(params + twin, grads + grads):
        w.grad = g.clone()
    hyper = dict(lr=0.05, f_star=-0.2, c=0.3, weight_decay=0.01, maximize=maximize)
    host, reference = PolyakStep(params, **hyper), PolyakStep(twin, **hyper)
    for loss in (2.0, 0.7, 0.1, -0.5):  # the last: L ≤ L* with maximize off, no step
        closure = functools.partial(torch.tensor, loss, dtype=dtype)
        host.step(closure)
        with monkeypatch.context() as m:
            m.setattr(polyak, "HOST_DTYPES", ())  # the tensor path, as on a GPU
            reference.step(closure)
        assert host.param_groups[0]["step_size"] == reference.param_groups[0]["step_size"]
        for a, b in zip(params, twin):
            assert torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def test_a_polyak_step_on_the_cpu_makes_fewer_operator_calls():
    params = small_layer()
    optimizer = PolyakStep(params, lr=1e-3)
    optimizer.step(lambda: torch.tensor(1.0))
    with OperatorCount() as count:
        optimizer.step(lambda: torch.tensor(1.0))
    assert count.calls <= 48, count.calls  # 76 with the divisor from one-element tensors


def test_a_nonfinite_loss_is_still_refused_with_nothing_changed():
    params = small_layer()
    before = [p.detach().clone() for p in params]
    with pytest.raises(FloatingPointError, match="the loss is NaN or infinite"):
        PolyakStep(params, lr=1e-3).step(lambda: torch.tensor(math.nan))
    assert all(torch.equal(a, b) for a, b in zip(params, before))
