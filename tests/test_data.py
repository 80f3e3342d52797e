import numpy as np
import pytest

from attnbias.data import (
    GENERATORS,
    Problem,
    antipodal,
    dm,
    example1,
    gaussian_unit,
    linear_separable,
)


def _scores(P):
    return P.y[:, None] * np.einsum("ntd,d->nt", P.X, P.v)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_reproducible_float64_and_valid(name):
    a, b = GENERATORS[name](), GENERATORS[name]()
    assert isinstance(a, Problem) and a.X.dtype == np.float64
    for field in ("X", "z", "y", "v"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert set(np.unique(a.y)) <= {-1.0, 1.0}
    if a.query == "self":
        np.testing.assert_array_equal(a.z, a.X[:, 0])


@pytest.mark.parametrize("make", [gaussian_unit, example1, antipodal, dm, linear_separable])
def test_seed_changes_the_draw(make):
    assert not np.array_equal(make(seed=1).X, make(seed=2).X)


def test_gaussian_unit_rows_are_unit():
    P = gaussian_unit(6, 8, 10, seed=3)
    np.testing.assert_allclose(np.linalg.norm(P.X, axis=-1), 1.0)
    np.testing.assert_allclose(np.linalg.norm(P.z, axis=-1), 1.0)
    assert np.linalg.norm(P.v) == pytest.approx(1.0)


@pytest.mark.parametrize("make", [example1, antipodal])
def test_example1_assumptions(make):
    P = make(n=4, T=5, d=80, seed=7)
    gamma = _scores(P)
    n = len(P.y)
    # Assumption 2: the optimal token scores higher, all others share one score (0 here)
    np.testing.assert_allclose(gamma[np.arange(n), P.opt], 1.0, rtol=1e-10)
    others = np.ones_like(gamma, dtype=bool)
    others[np.arange(n), P.opt] = False
    np.testing.assert_allclose(gamma[others], 0.0, atol=1e-10)
    # Assumption 1 (example1): distinct tokens nearly orthogonal
    if make is example1:
        flat = P.X.reshape(-1, P.X.shape[-1])
        G = flat @ flat.T
        cos = G / np.sqrt(np.outer(np.diag(G), np.diag(G)))
        assert np.abs(cos - np.eye(len(flat))).max() < 0.5


def test_antipodal_opt_tokens():
    P = antipodal(n=6, T=3, d=40, seed=1)
    opt_tokens = P.X[np.arange(6), P.opt] * P.y[:, None]
    np.testing.assert_allclose(opt_tokens, np.broadcast_to(opt_tokens[0], opt_tokens.shape))


def test_dm_label_and_norms():
    P = dm(n=10, d=50, seed=2)
    np.testing.assert_array_equal(np.sign(P.X[:, 0] @ P.v), P.y)
    assert (np.linalg.norm(P.X[:, 0], axis=-1) > np.linalg.norm(P.X[:, 1], axis=-1)).all()


def test_linear_separable_has_its_margin():
    P = linear_separable(n=50, d=4, seed=0, margin=0.2)
    assert (P.y * (P.X[:, 0] @ P.v) >= 0.2 - 1e-12).all()


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: gaussian_unit(n=0), ValueError, "n must be >= 1"),
        (lambda: example1(n=4, T=4, d=8), ValueError, "d >= n\\*T"),
        (lambda: dm(d=2.5), TypeError, "d must be an integer"),
        (lambda: gaussian_unit(T=True), TypeError, "T must be an integer, got bool"),
    ],
)
def test_bad_sizes_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
