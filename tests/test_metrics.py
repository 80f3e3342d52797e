import numpy as np
import pytest
import torch

from attnbias.metrics import (
    alignment,
    directional_bregman,
    gap_of_margin,
    least_margin,
    logit_margins,
    margin_gap,
    margins,
    matrix_norm,
    normalized_margin,
    selected_score,
    token_score,
)
from attnbias.model import attention_logits
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
    least = least_margin(torch.tensor([[6.0, -3.0, 1.5]]), [0])
    assert least.item() == 4.5  # min over t ≠ α of 6 − a_t
    torch.testing.assert_close(logit_margins(torch.tensor([[6.0, -3.0, 1.5]]), [0]), gaps)
    optimum = torch.tensor(2.0)
    assert gap_of_margin(least, torch.tensor(3.0), optimum).item() == 1.0 - 4.5 / 3 * 2.0


def least_margin_written_out(W, X, z, alpha):
    """The least margin as measure computed it before the logits were shared: logits from W,
    X, z by the two einsums, the selected logit minus each, +inf at α, the minimum."""
    logits = torch.einsum("...ntd,...nd->...nt", X, torch.einsum("...de,...ne->...nd", W, z))
    chosen = logits.gather(-1, alpha.expand(logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    gap = chosen.unsqueeze(-1) - logits
    is_alpha = torch.nn.functional.one_hot(alpha, logits.shape[-1]).bool().expand(gap.shape)
    return gap.masked_fill(is_alpha, float("inf")).amin(dim=(-2, -1)), logits


@pytest.mark.parametrize("norm", [2.0, 1.75, "nuc"])
def test_measures_from_logits_computed_once_are_the_written_out_ones_bit_for_bit(rng, norm):
    # engine.measure computes the logits once and reads every margin and score from them
    W = torch.as_tensor(rng.standard_normal((4, 6, 3, 3)))  # 4 runs, 6 recorded steps
    X = torch.as_tensor(rng.standard_normal((4, 1, 5, 7, 3)))
    z = torch.as_tensor(rng.standard_normal((4, 1, 5, 3)))
    alpha = torch.as_tensor(rng.integers(0, 7, (4, 1, 5)))
    optimum = torch.as_tensor(rng.uniform(1, 2, (4, 1)))
    expected, written_logits = least_margin_written_out(W, X, z, alpha)
    logits = attention_logits(W, X, z)
    least = least_margin(logits, alpha)
    assert torch.equal(least, expected)
    frobenius = torch.sqrt((W**2).sum((-2, -1)))
    torch.testing.assert_close(least / lp_norm(W, 2.0, (-2, -1)), expected / frobenius)
    assert torch.equal(least / lp_norm(W, 2.0, (-2, -1)), normalized_margin(W, X, z, alpha))
    size = matrix_norm(W, norm)
    gap = gap_of_margin(least, size, optimum)
    assert torch.equal(gap, 1.0 - expected / size * optimum)
    assert torch.equal(gap, margin_gap(W, X, z, alpha, norm, optimum))
    scores = torch.softmax(logits, dim=-1)
    written_scores = torch.softmax(written_logits, -1)
    at = alpha.expand(written_scores.shape[:-1]).unsqueeze(-1)
    chosen = written_scores.gather(-1, at).squeeze(-1)
    assert torch.equal(selected_score(scores, alpha), chosen.mean(-1))
    assert torch.equal(selected_score(scores, alpha), token_score(W, X, z, alpha))
