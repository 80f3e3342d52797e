"""The one ℓp norm and mirror map: exact where inputs are tame, scale-safe where they are not."""

import math

import mpmath
import pytest
import torch

from attnbias.norms import dual_exponent, inverse_mirror_map, lp_norm, mirror_map


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
