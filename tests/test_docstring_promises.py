"""What the API reference's docstrings promise (issue 33: every public name documented with
shapes and return types), checked: shapes, return types, errors."""

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

from attnbias.data import gaussian_unit
from attnbias.losses import LOSSES, MarginLoss, get_loss, logistic
from attnbias.metrics import nuclear_norm
from attnbias.model import AttentionClassifier
from attnbias.svm import att_svm, selected_tokens

N, T, D = 4, 5, 3


def inputs(batch=()):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(*batch, N, T, D, generator=g, dtype=torch.float64)
    z = torch.randn(*batch, N, D, generator=g, dtype=torch.float64)
    return X, z


@pytest.mark.parametrize("batch", [(), (2,)])
def test_scores_and_outputs_have_the_documented_shapes(batch):
    model = AttentionClassifier(D, v=torch.ones(D, dtype=torch.float64), init_scale=1.0,
                                generator=torch.Generator().manual_seed(1))  # fmt: skip
    X, z = inputs(batch)
    s = model.scores(X, z)
    assert s.shape == (*batch, N, T)
    torch.testing.assert_close(s.sum(-1), torch.ones(*batch, N, dtype=torch.float64))
    f = model(X, z)
    assert f.shape == (*batch, N)
    torch.testing.assert_close(f, torch.einsum("...nt,...ntd,d->...n", s, X, model.v))
    assert model.attention_matrix().shape == (D, D)
    assert model.dtype == torch.float64


def test_the_attention_matrix_of_the_factorisation_is_k_q_transposed():
    g = torch.Generator().manual_seed(2)
    model = AttentionClassifier(D, parameterization="KQ", m=2, init_scale=1.0, generator=g,
                                dtype=torch.float64)  # fmt: skip
    W = model.attention_matrix()
    assert W.shape == (D, D) and W.requires_grad
    torch.testing.assert_close(W, model.K @ model.Q.T)


def test_queries_and_the_errors_the_docstrings_name():
    X, z = inputs()
    self_model = AttentionClassifier(D, query="self", dtype=torch.float64)
    torch.testing.assert_close(self_model.query_of(X, None), X[:, 0, :])
    cross = AttentionClassifier(D, dtype=torch.float64)
    with pytest.raises(ValueError, match="z is required"):
        cross.query_of(X, None)
    with pytest.raises(TypeError, match="float32"):
        cross(X.float(), z.float())
    with pytest.raises(TypeError, match="float32"):
        cross.scores(X.float(), z.float())


def test_get_loss_returns_the_named_loss_or_the_loss_given():
    assert all(get_loss(name) is loss for name, loss in LOSSES.items())
    assert get_loss(logistic) is logistic and isinstance(get_loss("exponential"), MarginLoss)
    with pytest.raises(ValueError, match=r"correlation.*exponential.*logistic"):
        get_loss("hinge")
    u = torch.linspace(-3, 3, 7, dtype=torch.float64).reshape(7, 1)
    assert logistic(u).shape == u.shape == logistic.derivative(u).shape  # elementwise


def test_nuclear_norm_is_the_sum_of_singular_values_over_leading_axes():
    W = torch.randn(3, D, 2, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    norms = nuclear_norm(W)
    assert norms.shape == (3,)
    torch.testing.assert_close(norms, torch.linalg.svdvals(W).sum(-1))
    from_numpy = nuclear_norm(W[0].numpy().astype(np.float32))
    assert from_numpy.dtype == torch.float64  # an array is read as float64


def test_an_att_svm_result_has_the_documented_fields():
    P = gaussian_unit(n=N, T=T, d=D, seed=1)
    W0 = np.random.default_rng(4).normal(size=(D, D))
    alpha = selected_tokens(W0, P.X, P.z)  # W0 makes them win: the SVM is feasible
    result = att_svm(P.X, P.z, alpha)
    assert result.solved and result.error is None and result.status == "optimal"
    assert result.W.shape == (D, D)
    assert result.constraints.shape == (N * (T - 1), 2)
    assert result.dual.shape == result.constraint_values.shape == (N * (T - 1),)
    assert (result.dual >= 0).all()
    assert result.dual.sum() == pytest.approx(result.norm, rel=1e-6)
    assert result.constraint_values.min() == pytest.approx(result.margin)
    assert result.margin == pytest.approx(1.0, abs=1e-6)
    assert result.norm_type == 2.0 and isinstance(result.kkt_residual, float)
    for k, (i, t) in enumerate(result.constraints):  # row k: the constraint of (sample i, token t)
        value = (P.X[i, alpha[i]] - P.X[i, t]) @ result.W @ P.z[i]
        assert value == pytest.approx(result.constraint_values[k])


def attribute_documented(body, name) -> bool:
    """Whether the class body defines `name` (a method, or a field followed by its docstring)."""
    for k, node in enumerate(body):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return bool(ast.get_docstring(node))
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            following = body[k + 1] if k + 1 < len(body) else None
            return isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
    raise LookupError(name)


@pytest.mark.parametrize(
    "module, cls, names",
    [
        ("model", "AttentionClassifier", ["forward", "scores", "attention_matrix", "query_of"]),
        ("svm/results", "AttSVMResult", ["W", "constraints"]),
        ("svm/results", "_Solution", ["norm", "margin", "status", "dual", "kkt_residual",
                                      "constraint_values", "solver", "error", "solved"]),
    ],
)  # fmt: skip
def test_the_reference_shows_these_members_they_have_docstrings(module, cls, names):
    # show_if_no_docstring: false (mkdocs.yml) leaves out a member without one
    source = Path(__file__).resolve().parents[1] / "src" / "attnbias" / f"{module}.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    assert [n for n in names if not attribute_documented(body, n)] == []


def test_get_loss_and_nuclear_norm_have_docstrings():
    assert get_loss.__doc__ and nuclear_norm.__doc__ and MarginLoss.__doc__


def two_parameters():
    # matrices: SpectralDescent takes nothing else
    return [torch.nn.Parameter(torch.eye(3, 2, dtype=torch.float64)),
            torch.nn.Parameter(torch.eye(2, dtype=torch.float64))]  # fmt: skip


@pytest.mark.parametrize(
    "name", ["NormalizedGD", "MirrorDescent", "SteepestDescent", "SignGD", "SpectralDescent"]
)
def test_step_returns_the_closures_loss_and_refuses_a_non_finite_gradient(name):
    import attnbias.optim

    params = two_parameters()
    opt = getattr(attnbias.optim, name)(params, lr=0.1)
    assert opt.step.__doc__  # shown in the API reference
    for w in params:
        w.grad = torch.ones_like(w)
    assert opt.step(lambda: torch.tensor(2.0)).item() == 2.0
    assert opt.step() is None
    before = [w.detach().clone() for w in params]
    params[0].grad = torch.full((3, 2), float("nan"), dtype=torch.float64)
    with pytest.raises(FloatingPointError, match="parameter 0 of group 0"):
        opt.step()
    assert all(torch.equal(w, b) for w, b in zip(params, before))  # no parameter changed


def test_polyak_step_needs_the_loss_and_returns_it():
    from attnbias.optim import PolyakStep

    params = two_parameters()
    opt = PolyakStep(params, lr=0.1)
    assert opt.step.__doc__
    for w in params:
        w.grad = torch.ones_like(w)
    with pytest.raises(ValueError, match="needs the loss"):
        opt.step()
    assert opt.step(lambda: torch.tensor(2.0)).item() == 2.0
    opt.hand_loss(torch.tensor(3.0))
    assert opt.step().item() == 3.0
    before = [w.detach().clone() for w in params]
    params[0].grad = torch.full((3, 2), float("nan"), dtype=torch.float64)
    with pytest.raises(FloatingPointError, match="gradient of parameter 0 of group"):
        opt.step(lambda: torch.tensor(2.0))
    assert all(torch.equal(w, b) for w, b in zip(params, before))


def test_the_stores_keys_discard_and_latest_do_what_their_docstrings_say(tmp_path):
    from attnbias.store import ResultsStore

    store = ResultsStore(tmp_path / "exp")
    for name in ("keys", "discard", "latest"):
        assert getattr(ResultsStore, name).__doc__  # shown in the API reference
    assert store.keys() == []
    second, first = store.save({"a": 2}), store.save({"a": 1})
    assert store.keys() == sorted([first, second])
    store.discard(first)
    store.discard(first)  # not stored: nothing to do
    assert store.keys() == [second]
    with pytest.raises(ValueError, match="not a file name"):
        store.discard("../outside")
    assert store.latest == store.directory / "latest"  # a property
