"""Max-margin solvers: feasibility, KKT, agreement with independent cvxpy formulations, errors."""

import cvxpy as cp
import numpy as np
import pytest
import scipy.linalg as sla
import torch
from scipy.optimize import linprog

from attnbias.svm import (
    InfeasibleSVMError,
    att_svm,
    att_svm_batch,
    constraint_matrix,
    head_svm,
    head_svm_batch,
    max_margin,
    optimal_tokens,
    selected_tokens,
    token_scores,
)
from attnbias.svm.cholesky import cholesky, gram, solve_factored

NORMS = [1.0, 1.5, 2.0, 3.0, np.inf, "nuc", "spectral"]
# (n, T, d): the reference size, a tiny one, and one with more constraints than unknowns
SHAPES = [(6, 8, 10), (3, 3, 4), (12, 5, 4)]
TIGHT = dict(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)


def unit_rows(a):
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def gaussian_unit(seed, n=6, T=8, d=10):
    """Tokens and queries ~ N(0, I) scaled to unit norm, labels ±1, and as token choice the
    tokens a random W selects (so the Att-SVM is feasible even with more constraints than d²)."""
    rng = np.random.default_rng(seed)
    X = unit_rows(rng.standard_normal((n, T, d)))
    z = unit_rows(rng.standard_normal((n, d)))
    y = rng.choice([-1.0, 1.0], size=n)
    v = unit_rows(rng.standard_normal(d))
    alpha = np.einsum("ntj,jk,nk->nt", X, rng.standard_normal((d, d)), z).argmax(axis=1)
    return X, z, y, v, alpha


def norm_of(W, norm):
    if norm in ("nuc", "spectral"):
        return np.linalg.norm(W, "nuc" if norm == "nuc" else 2)
    return np.linalg.norm(W.ravel(), norm)


def cvxpy_primal(A, norm):
    """min ‖w‖ s.t. A w ≥ 1 written directly in cvxpy (ℓ2 as a sum of squares)."""
    w = cp.Variable(A.shape[1])
    if norm == 2.0:
        objective = cp.sum_squares(w)
    elif norm == "nuc":
        d = round(np.sqrt(A.shape[1]))
        objective = cp.normNuc(cp.reshape(w, (d, d), order="C"))
    else:
        objective = cp.pnorm(w, norm)
    cp.Problem(cp.Minimize(objective), [A @ w >= 1]).solve(**TIGHT)
    return w.value


def cvxpy_dual_value(A, norm):
    """max 1ᵀλ s.t. ‖Aᵀλ‖_* ≤ 1, λ ≥ 0: equals min ‖w‖ s.t. Aw ≥ 1 by strong duality."""
    if norm == 1.0:  # an LP: max 1ᵀλ s.t. −1 ≤ Aᵀλ ≤ 1, λ ≥ 0 (HiGHS, exact)
        res = linprog(-np.ones(len(A)), A_ub=np.vstack([A.T, -A.T]), b_ub=np.ones(2 * A.shape[1]))
        return -res.fun
    lam = cp.Variable(A.shape[0], nonneg=True)
    g = A.T @ lam
    if norm == "nuc":
        d = round(np.sqrt(A.shape[1]))
        dual_norm = cp.sigma_max(cp.reshape(g, (d, d), order="C"))
    else:
        dual_norm = cp.pnorm(g, norm / (norm - 1))
    problem = cp.Problem(cp.Maximize(cp.sum(lam)), [dual_norm <= 1])
    problem.solve(**TIGHT)
    return problem.value


# ---------------------------------------------------------------------------- token choice


def test_token_scores_and_optimal_tokens():
    X, _, y, v, _ = gaussian_unit(0)
    gamma = token_scores(X, y, v)
    assert gamma.shape == (6, 8) and gamma.dtype == np.float64
    np.testing.assert_allclose(gamma[2, 5], y[2] * v @ X[2, 5])
    opt = optimal_tokens(X, y, v)
    assert opt.dtype == np.int64
    np.testing.assert_array_equal(opt, gamma.argmax(axis=1))


def test_optimal_token_tie_is_an_error():
    X, _, y, v, _ = gaussian_unit(0)
    best = token_scores(X, y, v)[3].argmax()
    other = (best + 1) % 8
    X[3, other] = X[3, best] * (1 + 1e-12)
    with pytest.raises(ValueError, match=f"sample 3 is tied between tokens {min(best, other)}"):
        optimal_tokens(X, y, v)


def test_selected_tokens_of_the_svm_solution_are_alpha():
    X, z, _, _, alpha = gaussian_unit(1)
    result = att_svm(X, z, alpha)
    logits = np.einsum("ntj,jk,nk->nt", X, result.W, z)
    np.testing.assert_array_equal(selected_tokens(result.W, X, z), logits.argmax(axis=1))
    np.testing.assert_array_equal(selected_tokens(result.W, X, z), alpha)  # margin ≥ 1 > 0


# ---------------------------------------------------------------------------- constraints


def test_constraint_matrix_matches_loop():
    X, z, _, _, alpha = gaussian_unit(2, n=3, T=4, d=3)
    rows = []
    for i in range(3):
        for t in range(4):
            if t != alpha[i]:
                rows.append(np.outer(X[i, alpha[i]] - X[i, t], z[i]).ravel())
    A = constraint_matrix(X, z, alpha)
    np.testing.assert_allclose(A, np.array(rows), rtol=0, atol=1e-15)
    W = np.random.default_rng(0).standard_normal((3, 3))
    i, t = 1, [s for s in range(4) if s != alpha[1]][2]  # row 3 + 2 of sample 1
    np.testing.assert_allclose(A[3 + 2] @ W.ravel(), (X[i, alpha[i]] - X[i, t]) @ W @ z[i])


# ---------------------------------------------------------------------------- solutions


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("norm", NORMS)
def test_att_svm_is_feasible_and_satisfies_kkt(shape, seed, norm):
    X, z, _, _, alpha = gaussian_unit(seed, *shape)
    result = att_svm(X, z, alpha, norm)
    A = constraint_matrix(X, z, alpha)
    assert result.W.shape == (shape[2], shape[2]) and result.W.dtype == np.float64
    assert result.status == "optimal"
    assert result.kkt_residual <= 1e-6
    assert result.margin >= 1 - 1e-8
    np.testing.assert_allclose(result.constraint_values, A @ result.W.ravel())
    assert result.constraint_values.min() == pytest.approx(result.margin)
    assert result.norm == pytest.approx(norm_of(result.W, norm), rel=1e-12)
    # dual: λ ≥ 0 and 1ᵀλ = ‖W‖ (no duality gap)
    assert result.dual.shape == (len(A),) and result.dual.min() >= -1e-8 * result.norm
    assert result.dual.sum() == pytest.approx(result.norm, rel=1e-6)
    assert result.constraints.shape == (len(A), 2)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_l2_matches_cvxpy(shape, seed):
    X, z, _, _, alpha = gaussian_unit(seed, *shape)
    result = att_svm(X, z, alpha, "fro")
    assert result.norm_type == 2.0
    w = cvxpy_primal(constraint_matrix(X, z, alpha), 2.0)
    assert result.norm == pytest.approx(np.linalg.norm(w), rel=1e-6)
    np.testing.assert_allclose(result.W.ravel(), w, atol=1e-6 * result.norm)
    assert result.kkt_residual <= 1e-10
    # exact in-house solutions; (12, 5, 4) has more constraints than unknowns: NNLS
    assert result.solver == ("nnls" if shape == (12, 5, 4) else "active-set")


@pytest.mark.parametrize("shape", SHAPES[:2])
@pytest.mark.parametrize("norm", [1.0, 1.5, 1.75, 3.0, "nuc"])
def test_norm_equals_independent_dual_value(shape, norm):
    X, z, _, _, alpha = gaussian_unit(3, *shape)
    A = constraint_matrix(X, z, alpha)
    result = att_svm(X, z, alpha, norm)
    assert result.norm == pytest.approx(cvxpy_dual_value(A, norm), rel=1e-5)
    if norm not in (1.0, "nuc"):  # strictly convex norms: the minimiser is unique
        w = cvxpy_primal(A, norm)
        np.testing.assert_allclose(result.W.ravel(), w, atol=1e-4 * np.abs(w).max())


@pytest.mark.parametrize("seed", [0, 1])
def test_nuclear_certificate_and_comparison_with_frobenius(seed):
    X, z, _, _, alpha = gaussian_unit(seed)
    A = constraint_matrix(X, z, alpha)
    nuc, fro = att_svm(X, z, alpha, "nuc"), att_svm(X, z, alpha, 2.0)
    G = (A.T @ nuc.dual).reshape(10, 10)  # must be a subgradient of ‖·‖_* at W
    assert np.linalg.norm(G, 2) <= 1 + 1e-6
    assert np.sum(G * nuc.W) == pytest.approx(np.linalg.norm(nuc.W, "nuc"), rel=1e-6)
    # each solution is feasible for the other problem, so neither can beat the other's optimum
    assert np.linalg.norm(nuc.W, "nuc") <= np.linalg.norm(fro.W, "nuc") * (1 + 1e-7)
    assert np.linalg.norm(fro.W) <= np.linalg.norm(nuc.W) * (1 + 1e-9)
    assert np.linalg.matrix_rank(nuc.W, tol=1e-6 * nuc.norm) < np.linalg.matrix_rank(fro.W)


@pytest.mark.parametrize("norm", NORMS)
def test_no_feasible_point_has_a_smaller_norm(norm):
    """Perturb W in random directions, rescale to margin 1 (a feasible point): never shorter."""
    X, z, _, _, alpha = gaussian_unit(4)
    A = constraint_matrix(X, z, alpha)
    result = att_svm(X, z, alpha, norm)
    w = result.W.ravel()
    rng = np.random.default_rng(0)
    for scale in (1e-4, 1e-2, 1e-1):
        for _ in range(20):
            point = w + scale * np.linalg.norm(w) * unit_rows(rng.standard_normal(w.size))
            margin = (A @ point).min()
            if margin > 0:
                feasible = point / margin
                assert norm_of(feasible.reshape(10, 10), norm) >= result.norm * (1 - 1e-9)
    for other in NORMS:  # the other norms' solutions are feasible points too
        W = att_svm(X, z, alpha, other).W
        assert norm_of(W, norm) >= result.norm * (1 - 1e-7)


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0])
@pytest.mark.parametrize("n", [4, 30])  # 30 > d: more constraints than unknowns
def test_head_svm_matches_cvxpy(p, n):
    rng = np.random.default_rng(n)
    d = 8
    w_true = rng.standard_normal(d)
    X = unit_rows(rng.standard_normal((n, 2, d)))
    y = np.sign(X[:, 1] @ w_true)
    result = head_svm(X, y, 1, p)  # one token index for every sample
    assert result.v.shape == (d,) and result.kkt_residual <= 1e-6 and result.margin >= 1 - 1e-8
    A = y[:, None] * X[:, 1]
    assert result.norm == pytest.approx(cvxpy_dual_value(A, p), rel=1e-5)
    np.testing.assert_allclose(result.constraint_values, y * (X[:, 1] @ result.v))


def test_max_margin_generic_and_torch_input():
    rng = np.random.default_rng(5)
    A = rng.standard_normal((7, 12))
    for norm in (1.5, 2.0, 4.0):
        result = max_margin(torch.as_tensor(A), norm)
        assert isinstance(result.w, np.ndarray) and result.w.dtype == np.float64
        assert result.kkt_residual <= 1e-6
        assert result.norm == pytest.approx(cvxpy_dual_value(A, norm), rel=1e-5)
    X, z, _, _, alpha = gaussian_unit(6)
    a = att_svm(torch.as_tensor(X), torch.as_tensor(z), torch.as_tensor(alpha), 3.0)
    b = att_svm(X, z, alpha, 3.0)
    np.testing.assert_allclose(a.W, b.W)


# ---------------------------------------------------------------------------- batches


@pytest.mark.parametrize("norm", [1.75, 2.0, 3.0, np.inf, "nuc", "spectral"])
def test_att_svm_batch_equals_single(norm):
    data = [gaussian_unit(seed) for seed in range(3)]
    Xs, zs, alphas = (np.stack([d[k] for d in data]) for k in (0, 1, 4))
    batch = att_svm_batch(Xs, zs, alphas, norm)
    assert len(batch) == 3
    for result, X, z, alpha in zip(batch, Xs, zs, alphas):
        single = att_svm(X, z, alpha, norm)
        assert result.kkt_residual <= 1e-6
        assert result.norm == pytest.approx(single.norm, rel=1e-7)
        if norm not in (np.inf, "spectral"):  # not strictly convex: W may differ, its norm not
            np.testing.assert_allclose(result.W, single.W, atol=1e-5 * np.abs(single.W).max())


def test_head_svm_batch_equals_single():
    data = [gaussian_unit(seed) for seed in range(3)]
    Xs, ys, alphas = [d[0] for d in data], [d[2] for d in data], [d[4] for d in data]
    for result, X, y, alpha in zip(head_svm_batch(Xs, ys, alphas, 3.0), Xs, ys, alphas):
        np.testing.assert_allclose(result.v, head_svm(X, y, alpha, 3.0).v)


# ---------------------------------------------------------------------------- infeasible


@pytest.mark.parametrize("norm", [1.0, 1.5, 2.0, np.inf, "nuc", "spectral"])
def test_infeasible_problems_raise(norm):
    X, z, _, _, alpha = gaussian_unit(0)
    duplicate = X.copy()
    duplicate[2, (alpha[2] + 1) % 8] = duplicate[2, alpha[2]]
    with pytest.raises(InfeasibleSVMError, match=r"sample 2: token \d equals the selected token"):
        att_svm(duplicate, z, alpha, norm)

    zero_query = z.copy()
    zero_query[4] = 0
    with pytest.raises(InfeasibleSVMError, match="sample 4: z_4 is zero"):
        att_svm(X, zero_query, alpha, norm)

    # sample 1 repeats sample 0 but selects another token: constraints a and −c·a contradict
    X2, z2, alpha2 = X.copy(), z.copy(), alpha.copy()
    X2[1], z2[1], alpha2[1] = X2[0], z2[0], (alpha[0] + 1) % 8
    with pytest.raises(InfeasibleSVMError, match="Farkas") as info:
        att_svm(X2, z2, alpha2, norm)
    assert "(sample 0, token" in str(info.value) and "(sample 1, token" in str(info.value)
    A = constraint_matrix(X2, z2, alpha2)
    cert = info.value.certificate
    assert cert.min() >= 0 and np.abs(A.T @ cert).max() < 1e-9 and cert.sum() > 0

    if norm not in ("nuc", "spectral"):  # head SVM: the same point with both labels
        Xh, y = X.copy(), np.ones(6)
        Xh[1, alpha[1]], y[1] = Xh[0, alpha[0]], -1.0
        with pytest.raises(InfeasibleSVMError, match=r"sample 0.*sample 1|sample 1.*sample 0"):
            head_svm(Xh, y, alpha, norm)


# ---------------------------------------------------------------------------- bad input


def test_bad_input_names_the_argument():
    X, z, y, v, alpha = gaussian_unit(0)
    with pytest.raises(ValueError, match="X must have shape"):
        att_svm(X[0], z, alpha)
    with pytest.raises(ValueError, match="z must have shape"):
        att_svm(X, z[:, :3], alpha)
    nan = X.copy()
    nan[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        att_svm(nan, z, alpha)
    with pytest.raises(ValueError, match="y must hold labels"):
        head_svm(X, y * 2, alpha)
    with pytest.raises(ValueError, match="alpha must hold indices"):
        att_svm(X, z, alpha + 8)
    with pytest.raises(ValueError, match="alpha must have shape"):
        att_svm(X, z, alpha[:3])
    for bad in ("foo", 0.5, np.nan):
        with pytest.raises(ValueError, match="norm must"):
            att_svm(X, z, alpha, bad)
    for matrix_norm in ("nuc", "spectral"):
        with pytest.raises(ValueError, match=f"p='{matrix_norm}' is a norm of a matrix"):
            head_svm(X, y, alpha, matrix_norm)
    with pytest.raises(ValueError, match="W must have shape"):
        selected_tokens(np.eye(3), X, z)
    with pytest.raises(ValueError, match="v must have shape"):
        optimal_tokens(X, y, v[:4])
    with pytest.raises(ValueError, match="same length"):
        att_svm_batch([X, X], [z], [alpha, alpha])
    for matrix_norm in ("nuc", "spectral"):
        with pytest.raises(ValueError, match=f"the {matrix_norm} norm needs a square W"):
            max_margin(np.ones((3, 5)), matrix_norm)


# ---------------------------------------------------------------------------- solver paths


@pytest.mark.parametrize("norm", [1.0, "nuc"])
def test_lifted_conic_formulation_on_a_larger_instance(norm):
    """Above 20,000 entries of A the LP / SDP go through u_i = W z_i (sparse factors)."""
    X, z, _, _, alpha = gaussian_unit(7, n=20, T=8, d=12)
    A = constraint_matrix(X, z, alpha)
    assert A.size > 20_000
    result = att_svm(X, z, alpha, norm)
    assert result.kkt_residual <= 1e-6 and result.margin >= 1 - 1e-8
    assert result.norm == pytest.approx(cvxpy_dual_value(A, norm), rel=1e-5)


def test_lp_falls_back_to_clarabel(monkeypatch):
    import attnbias.svm.solver as svm

    X, z, _, _, alpha = gaussian_unit(8)
    expected = att_svm(X, z, alpha, 3.0)
    monkeypatch.setattr(svm, "solve_lp", lambda A, p, w, lam: (2 * w, lam))  # not a KKT point
    result = att_svm(X, z, alpha, 3.0)
    assert result.solver == "clarabel" and result.kkt_residual <= 1e-6
    assert result.norm == pytest.approx(expected.norm, rel=1e-7)


def test_inaccurate_solution_warns(monkeypatch):
    import attnbias.svm.solver as svm

    monkeypatch.setattr(svm, "KKT_TOL", 0.0)
    X, z, _, _, alpha = gaussian_unit(9)
    with pytest.warns(RuntimeWarning, match="inaccurate"):
        result = att_svm(X, z, alpha, 1.5)
    assert result.status == "optimal_inaccurate"


def test_one_att_svm_in_several_norms_solves_its_l2_start_once(monkeypatch):
    """Every norm starts from the ℓ2 solution: asked for in three norms, one Att-SVM's ℓ2
    active set is solved once, and each answer is the one solved afresh."""
    from attnbias.data import gaussian_unit
    from attnbias.svm import att_svm_batch, l2

    problem = gaussian_unit(6, 8, 10, seed=3)
    alpha = [np.arange(6) % 8]  # any tokens: gaussian_unit separates them all
    args = ([problem.X], [problem.z], alpha)
    fresh = {}
    for p in (1.75, 2.0, 3.0):
        l2._remembered_active_set_l2.cache_clear()
        fresh[p] = att_svm_batch(*args, norm=p)[0].W
    calls = []
    solve = l2._active_set_l2
    monkeypatch.setattr(l2, "_active_set_l2", lambda A: calls.append(1) or solve(A))
    l2._remembered_active_set_l2.cache_clear()
    for p in (1.75, 2.0, 3.0):
        (found,) = att_svm_batch(*args, norm=p)
        assert found.status == "optimal"
        torch.testing.assert_close(found.W, fresh[p], rtol=0, atol=0)
    assert len(calls) == 1
    l2._remembered_active_set_l2.cache_clear()


def test_the_solvers_cholesky_is_scipy_s_bit_for_bit():
    """`svm.cholesky.cholesky` and `solve_factored` call LAPACK as scipy's cho_factor and
    cho_solve do, without their wrappers: the same bits, K left as it was, and the same
    refusals (a matrix that is not positive definite or not square; a factor or right-hand
    side that is not finite)."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((12, 30))
    b = rng.standard_normal(12)
    # gram's upper triangle (Fortran order, zeros below) and a full C-ordered matrix (sdp's)
    for K in (gram(A, rng.uniform(0.5, 2.0, 30)), np.ascontiguousarray(A @ A.T)):
        before = K.copy()
        factor = cholesky(K)
        expected = sla.cho_factor(K, lower=False, check_finite=False)
        assert np.array_equal(np.triu(factor[0]), np.triu(expected[0])) and factor[1] is False
        for rhs in (b, rng.standard_normal((12, 3))):
            assert np.array_equal(solve_factored(factor, rhs), sla.cho_solve(expected, rhs))
        assert np.array_equal(K, before)
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        cholesky(-K)
    with pytest.raises(ValueError, match="square"):
        cholesky(A)
    with pytest.raises(ValueError, match="infs or NaNs"):
        solve_factored(factor, np.where(np.arange(12) == 3, np.nan, b))
    with pytest.raises(ValueError, match="infs or NaNs"):
        solve_factored((np.where(np.eye(12) > 0, np.inf, factor[0]), False), b)
    with pytest.raises(ValueError, match="incompatible"):
        solve_factored(factor, b[:5])
