import numpy as np
import pytest
import torch

from attnbias.metrics import (
    alignment,
    directional_bregman,
    margins,
    normalized_margin,
    token_score,
)
from attnbias.norms import lp_norm


def _bregman_from_definition(a, b, p):
    """D_ψ(â, b̂) = ψ(â) − ψ(b̂) − ⟨∇ψ(b̂), â − b̂⟩ with ψ = (1/p)Σ|·|^p, written out in numpy."""
    a = a / (np.abs(a) ** p).sum() ** (1 / p)
    b = b / (np.abs(b) ** p).sum() ** (1 / p)
    psi = lambda w: (np.abs(w) ** p).sum() / p  # noqa: E731
    grad_b = np.sign(b) * np.abs(b) ** (p - 1)
    return psi(a) - psi(b) - (grad_b * (a - b)).sum()


@pytest.mark.parametrize("p", [1.75, 2.0, 3.0])
def test_directional_bregman_matches_definition(rng, p):
    a, b = rng.standard_normal((2, 4, 4))
    assert directional_bregman(a, b, p).item() == pytest.approx(_bregman_from_definition(a, b, p))
    assert directional_bregman(a, 7.5 * a, p).item() == pytest.approx(0.0, abs=1e-14)
    assert directional_bregman(a, b, p).item() > 0.0


def test_directional_bregman_p2_is_half_squared_distance(rng):
    a, b = rng.standard_normal((2, 3, 3))
    ua, ub = a / np.linalg.norm(a), b / np.linalg.norm(b)
    expected = 0.5 * np.sum((ua - ub) ** 2)
    assert directional_bregman(a, b, 2.0).item() == pytest.approx(expected, rel=1e-13)


def test_batched_metrics_equal_single(rng):
    W = torch.as_tensor(rng.standard_normal((5, 3, 3)))
    ref = torch.as_tensor(rng.standard_normal((3, 3)))
    batched = directional_bregman(ref, W, 3.0)
    cos = alignment(W, ref)
    for r in range(5):
        assert batched[r] == pytest.approx(directional_bregman(ref, W[r], 3.0).item(), rel=1e-13)
        assert cos[r] == pytest.approx(alignment(W[r], ref).item(), rel=1e-13)


def test_alignment_and_norms(rng):
    W = rng.standard_normal((3, 3))
    assert alignment(W, 2 * W).item() == pytest.approx(1.0)
    assert alignment(W, -W).item() == pytest.approx(-1.0)
    assert alignment(np.zeros((3, 3)), W).item() == 0.0
    assert lp_norm(W, 3.0).item() == pytest.approx((np.abs(W) ** 3).sum() ** (1 / 3))
    v = rng.standard_normal(4)
    assert alignment(v, v, dim=-1).item() == pytest.approx(1.0)


def test_margins_and_token_score_by_hand():
    # one sample, d=1: logits x_t·W·z = (2, -1, 0.5)·3, α = 0
    X = np.array([[[2.0], [-1.0], [0.5]]])
    z = np.array([[1.0]])
    W = np.array([[3.0]])
    gaps = margins(W, X, z, [0])
    assert gaps[0, 0] == float("inf")
    torch.testing.assert_close(gaps[0, 1:], torch.tensor([9.0, 4.5]))
    assert normalized_margin(W, X, z, [0]).item() == pytest.approx(4.5 / 3)
    logits = np.array([6.0, -3.0, 1.5])
    assert token_score(W, X, z, [0]).item() == pytest.approx(np.exp(6) / np.exp(logits).sum())
