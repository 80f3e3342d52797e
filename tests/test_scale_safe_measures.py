"""The theory measures read runs at any scale the float range holds (issue 28): a run at an
absurd step size (ngd-rates at its rates × 1e300) ends with weights near float64's largest,
and its norms and fitted slopes are numbers, not an overflow to inf."""

import warnings

import numpy as np
import pytest

from attnbias.theory_measures import frobenius, slope, unit


@pytest.fixture(autouse=True)
def overflow_is_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_the_frobenius_norm_of_huge_entries_is_finite_and_exact():
    W = np.full((2, 3, 3), 1e300)
    np.testing.assert_allclose(frobenius(W), [3e300, 3e300], rtol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(unit(W), axis=(-2, -1)), 1.0, rtol=1e-15)


def test_a_slope_is_the_same_at_any_scale_of_x_and_y():
    x = np.array([1.0, 2.0, 3.0, 5.0])
    y = np.array([2.0, 3.9, 6.1, 10.0])
    small = slope(x, y)
    assert slope(x * 1e300, y * 1e300) == pytest.approx(small, rel=1e-12)
    assert slope(x, -y * 1e300) == pytest.approx(-small * 1e300, rel=1e-12)


def test_a_slope_without_points_or_spread_is_nan_and_of_a_constant_is_zero():
    assert np.isnan(slope(np.array([1.0, 2.0]), np.array([1.0, 2.0])))
    assert np.isnan(slope(np.ones(4), np.arange(4.0)))
    assert slope(np.arange(4.0), np.zeros(4)) == 0.0
