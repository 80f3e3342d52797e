"""Honest SVM results: every p against cvxpy, NaN never "optimal", per-instance batch statuses,
true reasons for near-infeasible problems."""

import warnings

import cvxpy as cp
import numpy as np
import pytest

import attnbias.svm.api as svm_api
import attnbias.svm.matrix_norms as svm_matrix_norms
import attnbias.svm.solver as svm_solver
from attnbias.svm import (
    InfeasibleSVMError,
    SVMSolveError,
    att_svm,
    att_svm_batch,
    constraint_matrix,
    head_svm_batch,
)
from attnbias.svm.norms import kkt_residual
from test_svm import gaussian_unit as svm_instance
from test_svm import unit_rows

TIGHT = dict(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)


def gaussian_unit(seed, n=6, T=8, d=10):
    X, z, _, _, alpha = svm_instance(seed, n, T, d)
    return X, z, alpha


def pnorm(w, p):
    """‖w‖_p through the largest entry, so that p = 1000 neither underflows nor overflows."""
    top = np.abs(w).max()
    return top * np.linalg.norm(w / top, p)


def cvxpy_reference(A, p):
    """(min ‖w‖_p s.t. Aw ≥ 1, max 1ᵀλ s.t. ‖Aᵀλ‖_q ≤ 1, λ ≥ 0), both by cvxpy with exact
    power cones (its default rational approximation changes p); the primal value is computed
    here, as cvxpy's own value underflows for large p."""
    w = cp.Variable(A.shape[1])
    cp.Problem(cp.Minimize(cp.pnorm(w, p, approx=False)), [A @ w >= 1]).solve(**TIGHT)
    primal = pnorm(w.value / (A @ w.value).min(), p)
    lam = cp.Variable(A.shape[0], nonneg=True)
    dual = cp.Problem(
        cp.Maximize(cp.sum(lam)), [cp.pnorm(A.T @ lam, p / (p - 1), approx=False) <= 1]
    )
    dual.solve(**TIGHT)
    return primal, dual.value


# ---------------------------------------------------------------------------- every p


@pytest.mark.parametrize("p", [1.001, 1.01, 50.0, 100.0, 1000.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_extreme_p_is_optimal_and_agrees_with_cvxpy(p, seed):
    X, z, alpha = gaussian_unit(seed)
    A = constraint_matrix(X, z, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "inaccurate" warning, no overflow
        result = att_svm(X, z, alpha, p)
    assert result.status == "optimal"
    assert result.kkt_residual <= 1e-6
    assert np.all(np.isfinite(result.W)) and np.all(np.isfinite(result.dual))
    assert result.margin >= 1 - 1e-9  # feasible
    assert (A @ result.W.ravel()).min() >= 1 - 1e-9
    assert result.norm == pytest.approx(pnorm(result.W.ravel(), p), rel=1e-12)
    primal, dual = cvxpy_reference(A, p)
    assert result.norm == pytest.approx(primal, rel=1e-6)
    assert result.norm == pytest.approx(dual, rel=1e-6)  # no duality gap
    assert result.dual.sum() == pytest.approx(result.norm, rel=1e-6)


# ---------------------------------------------------------------------------- NaN


def test_kkt_residual_propagates_nan():
    X, z, alpha = gaussian_unit(0)
    A = constraint_matrix(X, z, alpha)
    result = att_svm(X, z, alpha, 3.0)
    for k in (0, 5, len(A) - 1):  # wherever the NaN sits
        lam = result.dual.copy()
        lam[k] = np.nan
        assert np.isnan(kkt_residual(A, result.W.ravel(), lam, 3.0))
    w = result.W.ravel().copy()
    w[7] = np.nan
    assert np.isnan(kkt_residual(A, w, result.dual, 3.0))


def nan_duals(solve):
    """A solver that returns the right w with one NaN multiplier (not the first)."""

    def patched(*args, **kwargs):
        w, lam = solve(*args, **kwargs)
        lam = lam.copy()
        lam[1] = np.nan
        return w, lam

    return patched


@pytest.mark.parametrize(
    "norm, in_house",
    [
        (3.0, "solve_lp"),
        (1.0, "solve_l1"),
        (np.inf, "solve_linf"),
        ("nuc", "solve_nuclear"),
        ("spectral", "solve_spectral"),
    ],
)
def test_nan_multipliers_fall_back_to_a_verified_solver(monkeypatch, norm, in_house):
    X, z, alpha = gaussian_unit(2)
    expected = att_svm(X, z, alpha, norm)
    # a matrix norm's structured solve is its entry's (svm.matrix_norms)
    module = svm_matrix_norms if isinstance(norm, str) else svm_solver
    monkeypatch.setattr(module, in_house, nan_duals(getattr(module, in_house)))
    result = att_svm(X, z, alpha, norm)
    assert result.solver == "clarabel" and result.status == "optimal"
    assert np.all(np.isfinite(result.dual)) and result.kkt_residual <= 1e-6
    assert result.norm == pytest.approx(expected.norm, rel=1e-6)


@pytest.mark.parametrize("norm", [3.0, "nuc", "spectral"])
def test_nan_multipliers_are_never_optimal(monkeypatch, norm):
    monkeypatch.setattr(svm_solver, "solve_lp", nan_duals(svm_solver.solve_lp))
    for name in ("solve_nuclear", "solve_spectral"):
        monkeypatch.setattr(svm_matrix_norms, name, nan_duals(getattr(svm_matrix_norms, name)))
    monkeypatch.setattr(svm_solver, "conic_solve", nan_duals(svm_solver.conic_solve))
    monkeypatch.setattr(svm_api, "parametric_conic", lambda shape, norm_type: None)  # → conic_solve
    X, z, alpha = gaussian_unit(3)
    with pytest.raises(SVMSolveError, match="KKT verification"):
        att_svm(X, z, alpha, norm)
    (result,) = att_svm_batch(X[None], z[None], alpha[None], norm)
    assert result.status == "failed" and not result.solved
    assert result.W is None and isinstance(result.error, SVMSolveError)


# ---------------------------------------------------------------------------- batches


def batch_with_infeasible_middle():
    data = [gaussian_unit(seed) for seed in range(3)]
    Xs, zs, alphas = (np.stack([d[k] for d in data]) for k in range(3))
    # instance 1: sample 1 repeats sample 0 but selects another token (a Farkas certificate)
    Xs[1, 1], zs[1, 1], alphas[1, 1] = Xs[1, 0], zs[1, 0], (alphas[1, 0] + 1) % 8
    return Xs, zs, alphas


@pytest.mark.parametrize("norm", [2.0, 1.5, "nuc"])
def test_batch_reports_a_status_per_instance(norm):
    Xs, zs, alphas = batch_with_infeasible_middle()
    results = att_svm_batch(Xs, zs, alphas, norm)
    assert [r.status for r in results] == ["optimal", "infeasible", "optimal"]
    for b in (0, 2):
        single = att_svm(Xs[b], zs[b], alphas[b], norm)
        assert results[b].solved and results[b].norm == pytest.approx(single.norm, rel=1e-7)
    bad = results[1]
    assert not bad.solved and bad.W is None and bad.dual is None and np.isnan(bad.norm)
    assert isinstance(bad.error, InfeasibleSVMError) and "Farkas" in str(bad.error)
    A = constraint_matrix(Xs[1], zs[1], alphas[1])
    cert = bad.error.certificate
    assert cert.min() >= 0 and cert.sum() == pytest.approx(1) and np.abs(A.T @ cert).max() < 1e-12
    with pytest.raises(InfeasibleSVMError, match="Farkas"):  # a single instance still raises
        att_svm(Xs[1], zs[1], alphas[1], norm)


def test_head_batch_reports_a_status_per_instance():
    rng = np.random.default_rng(0)
    Xs = [unit_rows(rng.standard_normal((5, 2, 4))) for _ in range(2)]
    ys = [np.sign(X[:, 1] @ rng.standard_normal(4)) for X in Xs]
    Xs[0][1, 1], ys[0][1] = Xs[0][0, 1], -ys[0][0]  # the same point with both labels
    results = head_svm_batch(Xs, ys, [1, 1], 2.0)
    assert [r.status for r in results] == ["infeasible", "optimal"]
    assert results[0].v is None and results[1].v.shape == (4,)


# ---------------------------------------------------------------------------- near-infeasible


def near_duplicate(distance, seed=0):
    """Token (α_2 + 1) of sample 2 moved to `distance` from the selected token."""
    X, z, alpha = gaussian_unit(seed)
    t = (alpha[2] + 1) % 8
    step = unit_rows(np.random.default_rng(1).standard_normal(10))
    X[2, t] = X[2, alpha[2]] + distance * step
    return X, z, alpha, t


@pytest.mark.parametrize("norm", [2.0, 3.0, 1.0])
def test_token_close_to_the_selected_one_is_solved(norm):
    """1e-8 apart: a feasible problem whose W is large (≥ 1/‖a_k‖_*), not an infeasible one."""
    X, z, alpha, t = near_duplicate(1e-8)
    A = constraint_matrix(X, z, alpha)
    result = att_svm(X, z, alpha, norm)
    assert result.status == "optimal" and result.kkt_residual <= 1e-6
    assert (A @ result.W.ravel()).min() >= 1 - 1e-8
    k = 2 * 7 + (t if t < alpha[2] else t - 1)  # the row of (sample 2, token t)
    q = np.inf if norm == 1.0 else norm / (norm - 1)
    assert result.norm >= 1 / np.linalg.norm(A[k], q) * (1 - 1e-9) > 1e7


@pytest.mark.parametrize("distance", [1e-12, 1e-14])
@pytest.mark.parametrize("norm", [2.0, 3.0, "nuc"])
def test_token_too_close_says_so(distance, norm):
    X, z, alpha, t = near_duplicate(distance)
    with pytest.raises(InfeasibleSVMError) as info:
        att_svm(X, z, alpha, norm)
    message = str(info.value)
    assert "equals" not in message and "zero" not in message
    assert "numerically" in message
    assert f"sample 2: token {t} is {distance:.2g} from the selected token {alpha[2]}" in message
    assert info.value.numerical and 0.5 / distance < info.value.norm_bound < np.inf


def test_tiny_query_says_so():
    X, z, alpha = gaussian_unit(0)
    z[4] *= 1e-12
    with pytest.raises(InfeasibleSVMError, match="numerically") as info:
        att_svm(X, z, alpha)
    message = str(info.value)
    assert "equals" not in message and "is zero" not in message
    assert "‖z_4‖ is 1e-12" in message and info.value.numerical


def test_uniformly_tiny_data_is_only_a_scale():
    X, z, alpha = gaussian_unit(0)
    small = att_svm(X, z * 1e-12, alpha, 3.0)
    unit = att_svm(X, z, alpha, 3.0)
    assert small.status == "optimal" and small.norm == pytest.approx(unit.norm * 1e12, rel=1e-9)


def test_exact_duplicates_and_zero_queries_keep_their_exact_reason():
    X, z, alpha = gaussian_unit(0)
    X[2, (alpha[2] + 1) % 8] = X[2, alpha[2]]
    z[4] = 0
    with pytest.raises(InfeasibleSVMError, match="equals the selected token") as info:
        att_svm(X, z, alpha)
    assert "z_4 is zero" in str(info.value) and not info.value.numerical
    assert info.value.norm_bound == np.inf
