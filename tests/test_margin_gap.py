"""The margin gap (docs/theory.md#atlas), 1 − γ_N(W)/γ*_N, and the matrix norms it divides by."""

import numpy as np
import pytest
import torch

from attnbias.metrics import margin_gap, matrix_norm, normalized_margin
from attnbias.svm import att_svm, constraint_matrix
from test_svm import gaussian_unit

NORMS = [2.0, 1.75, 3.0, 1.0, np.inf, "spectral", "nuc"]
DUAL = {"spectral": "nuc", "nuc": "spectral", 1.0: np.inf, np.inf: 1.0}


def numpy_norm(W, norm):
    if norm in ("spectral", "nuc"):
        return np.linalg.norm(W, 2 if norm == "spectral" else "nuc")
    return np.linalg.norm(W.ravel(), norm)


def dual_of(norm):
    return DUAL[norm] if norm in DUAL else norm / (norm - 1)


@pytest.fixture(scope="module")
def solved():
    """One instance and its Att-SVM in every norm: (X, z, α, {norm: result})."""
    X, z, _, _, alpha = gaussian_unit(11)
    return X, z, alpha, {norm: att_svm(X, z, alpha, norm) for norm in NORMS}


def test_matrix_norm_matches_numpy(rng):
    W = rng.standard_normal((3, 5, 5))
    for norm in [*NORMS, "fro", "max", "inf"]:
        expected = [
            numpy_norm(w, {"fro": 2.0, "max": np.inf, "inf": np.inf}.get(norm, norm)) for w in W
        ]
        np.testing.assert_allclose(matrix_norm(W, norm).numpy(), expected, rtol=1e-13)


def test_matrix_norm_is_scale_safe_and_propagates_non_finite(rng):
    W = rng.standard_normal((4, 4))
    for norm in NORMS:
        for scale in (1e-200, 1e200):
            value = matrix_norm(W * scale, norm).item() / scale
            assert value == pytest.approx(numpy_norm(W, norm), rel=1e-12)
        bad = torch.as_tensor(np.stack([W, W, W]))
        bad[1, 0, 0], bad[2, 1, 1] = np.nan, np.inf
        value = matrix_norm(bad, norm)
        assert value[0].item() == pytest.approx(numpy_norm(W, norm), rel=1e-13)
        assert torch.isnan(value[1]) and value[2].item() == np.inf


def test_by_hand():
    # one sample, d = 1: logits (2, −1, 0.5)·3, α = 0: margins 9 and 4.5, ‖W‖ = 3
    X, z, W = np.array([[[2.0], [-1.0], [0.5]]]), np.array([[1.0]]), np.array([[3.0]])
    # the SVM: w·min(3, 1.5) ≥ 1 → w = 2/3, optimum 2/3, γ* = 1.5 = γ(W): gap 0
    assert margin_gap(W, X, z, [0], 2.0, 2 / 3).item() == pytest.approx(0.0, abs=1e-15)
    # −W: margins −9 and −4.5, so γ = −9/3 and the gap is 1 + 3·(2/3)
    assert margin_gap(-W, X, z, [0], "spectral", 2 / 3).item() == pytest.approx(3.0)
    assert margin_gap(W, X, z, [0], np.inf, 1.0).item() == pytest.approx(1 - 1.5)


@pytest.mark.parametrize("norm", NORMS)
def test_zero_at_the_svm_solution_and_scale_invariant(solved, norm):
    X, z, alpha, results = solved
    W_mm, optimum = results[norm].W, results[norm].norm
    assert abs(margin_gap(W_mm, X, z, alpha, norm, optimum).item()) <= 1e-9
    for scale in (1e-150, 3.7, 1e150):
        assert abs(margin_gap(scale * W_mm, X, z, alpha, norm, optimum).item()) <= 1e-9
    W = W_mm + 0.3 * np.random.default_rng(0).standard_normal(W_mm.shape) * np.abs(W_mm).max()
    gap = margin_gap(W, X, z, alpha, norm, optimum).item()
    for scale in (1e-150, 3.7, 1e150):
        scaled = margin_gap(scale * W, X, z, alpha, norm, optimum).item()
        assert scaled == pytest.approx(gap, rel=1e-12)


@pytest.mark.parametrize("norm", NORMS)
def test_nonnegative_for_random_and_other_norms_solutions(solved, norm):
    X, z, alpha, results = solved
    optimum = results[norm].norm
    W = torch.as_tensor(np.random.default_rng(1).standard_normal((200, 10, 10)))
    assert margin_gap(W, X, z, alpha, norm, optimum).min() >= -1e-12
    for other, result in results.items():  # feasible points of this norm's SVM too
        gap = margin_gap(result.W, X, z, alpha, norm, optimum).item()
        assert gap >= -1e-7  # the optimum is verified to KKT residual 1e-6 (here ~1e-10)
        if other == norm:
            assert gap <= 1e-9


@pytest.mark.parametrize("norm", NORMS)
def test_tends_to_zero_within_the_perturbation_bound(solved, norm):
    """W = W_mm + E with ‖E‖_N = ‖W_mm‖_N / k: each margin moves by at most ‖E‖_N ‖a‖_{N*}, so
    gap ≤ 1 − (1 − c/k) / (1 + 1/k) with c = ‖W_mm‖_N max_rows ‖a‖_{N*} → 0 as k grows."""
    X, z, alpha, results = solved
    W_mm, optimum = results[norm].W, results[norm].norm
    rows = constraint_matrix(X, z, alpha).reshape(-1, 10, 10)
    c = optimum * matrix_norm(rows, dual_of(norm)).max().item()
    E = np.random.default_rng(2).standard_normal(W_mm.shape)
    gaps = []
    for k in (1e1, 1e2, 1e3, 1e4, 1e5):
        W = W_mm + E * optimum / (k * numpy_norm(E, norm))
        gaps.append(margin_gap(W, X, z, alpha, norm, optimum).item())
        assert -1e-9 <= gaps[-1] <= 1 - (1 - c / k) / (1 + 1 / k) + 1e-12
    assert gaps[-1] <= 1e-3 * gaps[0]


def test_l2_agrees_with_the_normalized_margin_ratio(solved):
    X, z, alpha, results = solved
    W_mm = results[2.0].W
    W = torch.as_tensor(np.random.default_rng(3).standard_normal((5, 10, 10)) + W_mm)
    ratio = normalized_margin(W, X, z, alpha) / normalized_margin(W_mm, X, z, alpha)
    gap = margin_gap(W, X, z, alpha, "fro", results[2.0].norm)
    torch.testing.assert_close(gap, 1 - ratio, rtol=0, atol=1e-13)


def test_batched_equals_single():
    """Runs (R, G, d, d) on their own data (R, 1, n, T, d), optimum one per run (R, 1)."""
    data = [gaussian_unit(seed) for seed in range(3)]
    X, z, alpha = (torch.as_tensor(np.stack([d[k] for d in data])) for k in (0, 1, 4))
    optimum = torch.tensor([1.5, 2.0, np.nan])
    W = torch.as_tensor(np.random.default_rng(4).standard_normal((3, 4, 10, 10)))
    gap = margin_gap(W, X[:, None], z[:, None], alpha[:, None], "spectral", optimum[:, None])
    assert gap.shape == (3, 4) and torch.isnan(gap[2]).all()  # unsolved SVM: NaN
    for r in range(2):
        for g in range(4):
            single = margin_gap(W[r, g], X[r], z[r], alpha[r], "spectral", optimum[r].item())
            assert gap[r, g].item() == pytest.approx(single.item(), rel=1e-13)


def test_bad_norm_names_the_argument():
    with pytest.raises(ValueError, match='norm must be "fro", "nuc", "spectral"'):
        matrix_norm(np.eye(2), "operator")
    with pytest.raises(ValueError, match="norm must be >= 1"):
        margin_gap(np.eye(1), np.ones((1, 2, 1)), np.ones((1, 1)), [0], 0.5, 1.0)
