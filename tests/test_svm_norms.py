"""The ℓ∞ (entrywise max) and spectral Att-SVMs of the atlas: optimal values against independent
cvxpy formulations, the dual certificate, feasibility and the norm names."""

import cvxpy as cp
import numpy as np
import pytest

from attnbias.metrics import matrix_norm
from attnbias.norm_names import MATRIX_NORMS
from attnbias.svm import (
    att_svm,
    att_svm_batch,
    constraint_matrix,
    head_svm,
    max_margin,
    solver_memory,
)
from attnbias.svm.matrix_norms import MATRIX_NORM_SOLVERS
from attnbias.svm.norms import norm_value, parse_norm
from test_svm import TIGHT, gaussian_unit

REFERENCE = dict(solver=cp.CLARABEL)  # default tolerances (1e-8): TIGHT stalls on some LMIs

# (n, T, d): the reference size, a tiny one, and one with more constraints than unknowns
SHAPES = [(6, 8, 10), (3, 3, 4), (12, 5, 4)]


def independent_value(X, z, alpha, norm):
    """min ‖W‖ over a (d, d) matrix variable, constraints per sample as D_i W z_i ≥ 1 (not through
    constraint_matrix); ℓ∞ as max |W_jk|, spectral as the epigraph LMI [[tI, W], [Wᵀ, tI]] ⪰ 0."""
    n, T, d = X.shape
    W = cp.Variable((d, d))
    constraints = []
    for i in range(n):
        others = np.delete(np.arange(T), alpha[i])
        constraints.append((X[i, alpha[i]] - X[i, others]) @ W @ z[i] >= 1)
    if norm == np.inf:
        objective = cp.max(cp.abs(W))
    else:
        t = cp.Variable()
        identity = np.eye(d)
        constraints.append(cp.bmat([[t * identity, W], [W.T, t * identity]]) >> 0)
        objective = t
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(**REFERENCE)
    assert problem.status == "optimal"
    return problem.value


def dual_norm(G, norm):
    """‖G‖_*: entrywise ℓ1 for ℓ∞, nuclear for spectral."""
    return np.abs(G).sum() if norm == np.inf else np.linalg.norm(G, "nuc")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("norm", [np.inf, "spectral"])
def test_value_agrees_with_an_independent_formulation(shape, seed, norm):
    X, z, _, _, alpha = gaussian_unit(seed, *shape)
    result = att_svm(X, z, alpha, norm)
    assert result.status == "optimal" and result.kkt_residual <= 1e-6
    assert result.norm == pytest.approx(independent_value(X, z, alpha, norm), rel=1e-6)
    # feasible, and its norm is the one reported
    A = constraint_matrix(X, z, alpha)
    assert (A @ result.W.ravel()).min() >= 1 - 1e-9
    W_norm = np.abs(result.W).max() if norm == np.inf else np.linalg.norm(result.W, 2)
    assert result.norm == pytest.approx(W_norm, rel=1e-12)
    # the certificate: λ ≥ 0 dual feasible (‖Aᵀλ‖_* ≤ 1) with value 1ᵀλ = the optimum
    lam = result.dual
    assert lam.min() >= -1e-9 * result.norm
    assert dual_norm((A.T @ lam).reshape(shape[2], -1), norm) <= 1 + 1e-6
    assert lam.sum() == pytest.approx(result.norm, rel=1e-6)


@pytest.mark.parametrize("norm", [np.inf, "spectral"])
def test_max_margin_on_a_plain_matrix(norm):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((7, 16))
    result = max_margin(A, norm)
    assert result.status == "optimal" and result.margin >= 1 - 1e-9
    assert result.dual.sum() == pytest.approx(result.norm, rel=1e-6)
    assert dual_norm((A.T @ result.dual).reshape(4, 4), norm) <= 1 + 1e-6
    w = cp.Variable(16)
    objective = cp.norm(w, "inf") if norm == np.inf else cp.norm(cp.reshape(w, (4, 4), "C"), 2)
    reference = cp.Problem(cp.Minimize(objective), [A @ w >= 1])
    reference.solve(**TIGHT)
    assert result.norm == pytest.approx(reference.value, rel=1e-6)


def test_linf_head_svm_agrees_with_cvxpy():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((9, 3, 5))
    y = np.sign(X[:, 2] @ rng.standard_normal(5))
    result = head_svm(X, y, 2, "max")
    assert result.norm_type == np.inf and result.status == "optimal"
    v = cp.Variable(5)
    reference = cp.Problem(cp.Minimize(cp.norm(v, "inf")), [cp.multiply(y, X[:, 2] @ v) >= 1])
    reference.solve(**TIGHT)
    assert result.norm == pytest.approx(reference.value, rel=1e-6)
    assert np.abs((y[:, None] * X[:, 2]).T @ result.dual).sum() <= 1 + 1e-6


@pytest.mark.parametrize("norm", [np.inf, "spectral"])
def test_batch_with_an_infeasible_instance(norm):
    data = [gaussian_unit(seed) for seed in range(3)]
    Xs, zs, alphas = (np.stack([d[k] for d in data]) for k in (0, 1, 4))
    Xs[1, 1], zs[1, 1], alphas[1, 1] = Xs[1, 0], zs[1, 0], (alphas[1, 0] + 1) % 8
    results = att_svm_batch(Xs, zs, alphas, norm)
    assert [r.status for r in results] == ["optimal", "infeasible", "optimal"]
    assert results[1].W is None and "Farkas" in str(results[1].error)


def test_norm_names():
    for name in (float("inf"), "inf", "max", "INF", np.inf):
        assert parse_norm(name) == np.inf
    assert parse_norm("spectral") == "spectral" and parse_norm("nuc") == "nuc"
    assert parse_norm("fro") == 2.0 and parse_norm(3) == 3.0
    with pytest.raises(ValueError, match='"spectral", "inf", "max"'):
        parse_norm("operator")
    with pytest.raises(ValueError, match="norm must be >= 1"):
        parse_norm(0.5)
    with pytest.raises(ValueError, match="norm must be finite"):  # NaN
        parse_norm(float("nan"))
    with pytest.raises(TypeError, match="norm must be"):
        parse_norm(None)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("norm", ["nuc", "spectral"])
def test_structured_sdp_solver_agrees_with_cvxpy(shape, norm):
    """The Att-SVM's nuclear and spectral norms go through the rank-one interior point (not
    cvxpy); a reference written with cvxpy's own atoms agrees, and the certificate holds."""
    X, z, _, _, alpha = gaussian_unit(5, *shape)
    result = att_svm(X, z, alpha, norm)
    assert result.solver == "interior-point-sdp" and result.status == "optimal"
    A = constraint_matrix(X, z, alpha)
    w = cp.Variable(A.shape[1])
    d = shape[2]
    W = cp.reshape(w, (d, d), "C")
    objective = cp.normNuc(W) if norm == "nuc" else cp.sigma_max(W)
    reference = cp.Problem(cp.Minimize(objective), [A @ w >= 1])
    reference.solve(**REFERENCE)
    assert result.norm == pytest.approx(reference.value, rel=1e-6)
    assert (A @ result.W.ravel()).min() >= 1 - 1e-9
    G = (A.T @ result.dual).reshape(d, d)
    assert np.linalg.norm(G, 2 if norm == "nuc" else "nuc") <= 1 + 1e-6
    assert result.dual.min() >= -1e-9 * result.norm
    assert result.dual.sum() == pytest.approx(result.norm, rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["nuc", "spectral"])
@pytest.mark.parametrize("shape", [(6, 8, 10), (3, 3, 4), (12, 5, 4), (2, 2, 2), (1, 5, 3),
                                   (30, 10, 16)])  # fmt: skip
def test_structured_sdp_solver_answers_random_instances_itself(shape, norm):
    """Over many random instances (also more rows than unknowns, d = 2, one sample) the
    structured interior point's own answer passes the KKT check: Clarabel is never needed."""
    for seed in range(10):
        X, z, _, _, alpha = gaussian_unit(seed, *shape)
        result = att_svm(X, z, alpha, norm)
        assert (result.solver, result.status) == ("interior-point-sdp", "optimal"), seed
        assert result.kkt_residual <= 1e-6


def test_every_matrix_norm_has_its_solver_entry_and_they_agree():
    """A matrix norm's behaviour in the solvers is one entry (svm.matrix_norms): its value of
    W's singular values, its conic objective and its dual's, on a random W."""
    rng = np.random.default_rng(4)
    W = rng.standard_normal((3, 3))
    singular = np.linalg.svd(W, compute_uv=False)
    assert set(MATRIX_NORM_SOLVERS) == set(MATRIX_NORMS)
    for name, entry in MATRIX_NORM_SOLVERS.items():
        assert entry.name == name
        assert entry.value(singular) == norm_value(W.reshape(-1), name)
        objective = entry.conic_objective(cp.Constant(W)).value
        assert objective == pytest.approx(float(matrix_norm(W, name)), rel=1e-9)
        assert entry.memory(10, 9, 2) > 0
    assert MATRIX_NORM_SOLVERS["nuc"].value(singular) == pytest.approx(np.abs(singular).sum())
    assert MATRIX_NORM_SOLVERS["spectral"].solve(((), ()), None) is None  # needs ℓ2's w


def test_the_matrix_norms_memory_estimates_are_as_before():
    """The estimates of svm/memory.py, now read from each norm's entry (pinned from 9dda1b1)."""
    sizes = [(16, 36, "nuc", 4), (16, 36, "spectral", 4), (100, 9, "spectral", None),
             (7, 25, "nuc", None)]  # fmt: skip
    got = [solver_memory(m, D, norm, queries=q) for m, D, norm, q in sizes]
    assert got == [44032, 84512, 69944, 11536]
