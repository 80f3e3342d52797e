"""The one ℓp norm and mirror map: exact where inputs are tame, scale-safe where they are not."""

import math

import mpmath
import numpy as np
import pytest
import torch

from attnbias import norms
from attnbias.norms import (
    FOREACH_NORM_ULPS,
    NORM_MODES,
    dual_exponent,
    inverse_mirror_map,
    lp_norm,
    mirror_map,
    scaled_norms_foreach,
    unscaled_two_norms,
)
from attnbias.svm.norms import dual_norm_value, norm_value


def reference_norm(x: torch.Tensor, p: float) -> float:
    """‖x‖_p in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    values = [mpmath.mpf(float(v)) for v in x.reshape(-1)]
    if math.isinf(p):
        return float(max(abs(v) for v in values))
    return float(mpmath.fsum(abs(v) ** p for v in values) ** (1 / mpmath.mpf(p)))


@pytest.mark.parametrize("p", [1.0, 1.1, 1.5, 2.0, 7.0 / 3.0, 3.0, 11.0, 50.0, math.inf])
@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e-31, 1.0, 1e150, 1e300])
def test_lp_norm_is_right_at_every_scale(p, scale):
    g = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    x = g * scale
    got = float(lp_norm(x, p))
    assert math.isfinite(got) and got > 0
    assert got == pytest.approx(reference_norm(x, p), rel=1e-13)


def test_lp_norm_in_float32_does_not_underflow():
    """A float32 tensor whose entries are 1e-7 has ‖·‖₁₁ ≈ 1e-7 (its 11th powers are 0)."""
    x = torch.full((1000,), 1e-7, dtype=torch.float32)
    assert float(torch.linalg.vector_norm(x, 11)) == 0  # the naive norm underflows
    assert float(lp_norm(x, 11.0)) == pytest.approx(1e-7 * 1000 ** (1 / 11), rel=1e-5)


def test_lp_norm_per_run_exponents_and_dims():
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    p = torch.tensor([1.5, 2.0, 3.0], dtype=torch.float64)
    got = lp_norm(x, p, dim=(1, 2))
    want = torch.stack([torch.linalg.vector_norm(x[r], float(p[r])) for r in range(3)])
    torch.testing.assert_close(got, want, rtol=1e-14, atol=0)
    torch.testing.assert_close(
        lp_norm(x, 2.0, dim=(-2, -1)), torch.linalg.vector_norm(x, dim=(1, 2))
    )


def test_lp_norm_propagates_nan_and_inf_and_is_zero_at_zero():
    assert math.isnan(float(lp_norm(torch.tensor([1.0, float("nan")]), 3.0)))
    assert float(lp_norm(torch.tensor([1.0, float("inf")]), 3.0)) == math.inf
    assert float(lp_norm(torch.tensor([1.0, float("-inf")]), math.inf)) == math.inf
    assert float(lp_norm(torch.zeros(4), 1.1)) == 0.0


def modes(x: torch.Tensor, p: float, dim) -> dict[str, torch.Tensor]:
    """The norm of x in each mode that takes one tensor (the fused one in its own buffers)."""
    buffers = (torch.empty_like(x), torch.empty_like(x))
    return {
        "scaled": lp_norm(x, p, dim),
        "fused": lp_norm(x, p, dim, scratch=buffers, mode="fused"),
    }


@pytest.mark.parametrize("p", [1.0, 1.1, 1.5, 2.0, 3.0, 11.0, 50.0, math.inf])
@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1.0, 1e150, 1e300])
def test_every_mode_is_right_at_every_scale(p, scale):
    """The engine's fused mode is the scaled norm (x^{k+1/2} as x^k·√x): per run, at any scale."""
    g = torch.randn(3, 4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    x = g * scale
    want = [reference_norm(x[r], p) for r in range(3)]
    for mode, got in modes(x, p, (1, 2)).items():
        assert got.shape == (3,), mode
        assert got.tolist() == pytest.approx(want, rel=1e-13), mode


@pytest.mark.parametrize("p", [1.1, 2.0, 3.0, 7.0])
def test_the_fused_mode_is_the_scaled_one_bit_for_bit_but_for_half_powers(p):
    """Same arithmetic, same bits (p = 3: ℓ1.5 = x·√x, within an ulp of pow instead)."""
    x = torch.randn(6, 10, 10, dtype=torch.float64) * 1e-200
    got = modes(x, p, (1, 2))
    if p == 3.0:
        torch.testing.assert_close(got["fused"], got["scaled"], rtol=4e-16, atol=0)
    else:
        assert torch.equal(got["fused"], got["scaled"])
    got = modes(x, 1.5, (1, 2))
    torch.testing.assert_close(got["fused"], got["scaled"], rtol=4e-16, atol=0)


def test_the_fused_mode_propagates_nan_and_inf_per_run():
    x = torch.ones(3, 4, dtype=torch.float64)
    x[0, 1], x[1, 2] = math.nan, math.inf
    for mode, got in modes(x, 3.0, (1,)).items():
        assert math.isnan(got[0]) and got[1] == math.inf and got[2] == 4 ** (1 / 3), mode


def test_the_foreach_mode_is_the_unscaled_norms_of_many_tensors():
    tensors = [torch.randn(5, 7, dtype=torch.float64), torch.randn(5000, dtype=torch.float32)]
    got = lp_norm(tensors, mode="foreach")
    assert got.dtype == torch.float64
    assert torch.equal(got, unscaled_two_norms(tensors))
    for norm, t in zip(got, tensors):
        assert float(norm) == pytest.approx(float(lp_norm(t.double())), rel=1e-6)


def test_modes_refuse_what_they_cannot_do():
    x = torch.ones(3)
    modes = "scaled, fused, foreach, foreach_scaled"
    with pytest.raises(ValueError, match=f"mode must be one of {modes}"):
        lp_norm(x, mode="quick")
    with pytest.raises(ValueError, match="mode 'fused' needs scratch"):
        lp_norm(x, mode="fused")
    with pytest.raises(ValueError, match="mode 'foreach' takes p = 2"):
        lp_norm([x], 3.0, mode="foreach")
    with pytest.raises(ValueError, match="mode 'foreach_scaled' takes a number p"):
        lp_norm([x], 3.0, dim=0, mode="foreach_scaled")
    assert NORM_MODES == ("scaled", "fused", "foreach", "foreach_scaled")


@pytest.mark.parametrize("p", [1.0, 1.1, 2.0, 3.0, 50.0, 1000.0, math.inf])
@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e300])
def test_the_solvers_norms_are_the_one_lp_norm(p, scale):
    """The Att-SVM solvers' ‖w‖ and ‖g‖_* are `lp_norm`'s, bit for bit, of arrays at any scale."""
    w = np.random.default_rng(7).standard_normal(40) * scale
    assert norm_value(w, p) == float(lp_norm(torch.from_numpy(w), p))
    assert dual_norm_value(w, p) == float(lp_norm(torch.from_numpy(w), dual_exponent(p)))
    assert norm_value(w, p) == pytest.approx(reference_norm(torch.from_numpy(w), p), rel=1e-13)


def test_an_array_is_read_as_float64():
    w = np.array([3.0, 4.0], dtype=np.float32)
    got = lp_norm(w)
    assert got.dtype == torch.float64 and float(got) == 5.0


@pytest.mark.parametrize("p", [1.1, 1.75, 2.0, 3.0, 6.0])
def test_mirror_maps_are_inverse_and_match_their_formula(p):
    w = torch.randn(50, dtype=torch.float64) * 3
    theta = mirror_map(w, p)
    torch.testing.assert_close(theta, torch.sign(w) * w.abs() ** (p - 1), rtol=1e-15, atol=0)
    torch.testing.assert_close(inverse_mirror_map(theta, p), w, rtol=1e-13, atol=0)
    out = torch.empty_like(w)
    assert inverse_mirror_map(theta, p, out=out) is out


def test_dual_exponent():
    assert dual_exponent(2.0) == 2.0 and dual_exponent(1.1) == pytest.approx(11.0)
    assert dual_exponent(1.0) == math.inf and dual_exponent(math.inf) == 1.0


def foreach_norm_cases(dtype: torch.dtype) -> list[list[torch.Tensor]]:
    """Lists of tensors (with a run axis of one) at every scale the dtype holds: tame, near
    its largest and smallest normal numbers, subnormal, zero, and NaN or ∞ among them."""
    info = torch.finfo(dtype)
    generator = torch.Generator().manual_seed(5)
    shapes = [(1, 7), (1, 64, 64), (1, 192, 64), (1, 256), (1, 3000), (1,)]

    def at(scale: float) -> list[torch.Tensor]:
        return [
            ((2 * torch.rand(s, generator=generator, dtype=torch.float64) - 1) * scale).to(dtype)
            for s in shapes
        ]

    huge, tiny = info.max / 2, info.tiny * 4
    extreme = 1e300 if dtype == torch.float64 else 1e38
    scales = [1.0, huge, tiny, info.tiny * info.eps * 64, extreme, 1 / extreme]
    cases = [at(scale) for scale in scales]
    mixed = at(1.0)
    mixed[0], mixed[1] = mixed[0] * huge, mixed[1] * tiny
    mixed[2].zero_()
    mixed[3][0, 5] = math.nan
    mixed[4][0, 7] = -math.inf
    return [*cases, mixed]


@pytest.mark.parametrize("q", [11.0, 1.1 / 0.1, 3.0, 1.5, 2.0, 1.0, math.inf])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_foreach_scaled_norms_are_lp_norm_within_the_stated_ulps(dtype, q):
    """`scaled_norms_foreach` against the reference `lp_norm` of each tensor, at every
    scale: within FOREACH_NORM_ULPS ulps, the same NaN and ∞, and positive wherever the
    tensor is not zero (nothing underflowed or overflowed)."""
    ulp = torch.finfo(dtype).eps
    for tensors in foreach_norm_cases(dtype):
        got = lp_norm(tensors, q, mode="foreach_scaled")
        again = scaled_norms_foreach(tensors, q)
        assert torch.equal(got.nan_to_num(), again.nan_to_num())
        want = torch.stack([lp_norm(t, q, tuple(range(1, t.dim()))).reshape(()) for t in tensors])
        assert got.dtype == dtype and got.shape == (len(tensors),)
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
        finite = torch.isfinite(want)
        assert bool((got[finite] > 0).eq(want[finite] > 0).all())
        gap = (got[finite] - want[finite]).abs()
        assert bool((gap <= FOREACH_NORM_ULPS * ulp * want[finite]).all()), (got, want)


def test_foreach_max_without_the_multi_tensor_kernel_gives_the_same_maxima(monkeypatch):
    """torch < 2.4 has no torch._foreach_max: one amax a tensor, the same values (and NaN)."""
    tensors = [torch.tensor([1.0, -3.0, 2.0]), torch.tensor([[0.5], [math.nan]])]
    with_kernel = norms.foreach_max(tensors)
    monkeypatch.delattr(torch, "_foreach_max")
    without = norms.foreach_max(tensors)
    assert [float(t) for t in with_kernel[:1]] == [float(t) for t in without[:1]] == [2.0]
    assert math.isnan(float(with_kernel[1])) and math.isnan(float(without[1]))
