import numpy as np
import pytest
import torch

from attnbias.losses import LOSSES
from attnbias.model import (
    AttentionClassifier,
    attention_gradient,
    attention_scores,
    predict,
    risk_and_gradients,
)
from conftest import random_problem


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_closed_form_gradients_equal_autograd(rng, loss):
    X, z, y, v = random_problem(rng)
    W = torch.as_tensor(rng.standard_normal((3, 3)), dtype=torch.float64).requires_grad_()
    v = v.clone().requires_grad_()
    risk, grad_W, grad_v = risk_and_gradients(W, v, X, z, y, loss)
    auto_W, auto_v = torch.autograd.grad(risk, (W, v))
    torch.testing.assert_close(grad_W, auto_W, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad_v, auto_v, rtol=1e-12, atol=1e-14)


def test_batched_forms_equal_per_problem_forms(rng):
    problems = [random_problem(rng) for _ in range(4)]
    Xs, zs, ys, vs = (torch.stack(a) for a in zip(*problems))
    Ws = torch.as_tensor(rng.standard_normal((4, 3, 3)))
    risk, gW, gv = risk_and_gradients(Ws, vs, Xs, zs, ys)
    for r in range(4):
        one = risk_and_gradients(Ws[r], vs[r], Xs[r], zs[r], ys[r])
        torch.testing.assert_close(risk[r], one[0], rtol=1e-13, atol=0)
        torch.testing.assert_close(gW[r], one[1], rtol=1e-12, atol=1e-15)
        torch.testing.assert_close(gv[r], one[2], rtol=1e-12, atol=1e-15)


def test_predict_matches_definition(rng):
    X, z, _y, v = random_problem(rng, n=2, T=3, d=2)
    W = torch.as_tensor(rng.standard_normal((2, 2)))
    for i in range(2):
        a = torch.stack([X[i, t] @ W @ z[i] for t in range(3)])
        s = torch.exp(a) / torch.exp(a).sum()
        f = sum(s[t] * (v @ X[i, t]) for t in range(3))
        torch.testing.assert_close(predict(W, v, X, z)[i], f)
        torch.testing.assert_close(attention_scores(W, X, z)[i], s)


def test_classifier_modes(rng):
    X, z, _y, v = random_problem(rng, n=4, T=5, d=3)
    g = torch.Generator().manual_seed(0)
    model = AttentionClassifier(3, query="self", v=v, init_scale=1.0, generator=g)
    torch.testing.assert_close(model(X), predict(model.W, v, X, X[:, 0]))
    assert "v" not in dict(model.named_parameters())
    kq = AttentionClassifier(3, parameterization="KQ", m=2, train_head=True, v=v, init_scale=1.0)
    assert kq.K.shape == (3, 2) and "v" in dict(kq.named_parameters())
    torch.testing.assert_close(kq(X, z), predict(kq.K @ kq.Q.T, kq.v, X, z))
    with pytest.raises(ValueError, match="z is required"):
        kq(X)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(parameterization="QK"), "parameterization"),
        (dict(query="both"), "query"),
        (dict(v=np.zeros(4)), "v must have shape"),
    ],
)
def test_classifier_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttentionClassifier(3, **kwargs)


def test_gradient_helper_validates_input(rng):
    X, z, y, v = (a.numpy() for a in random_problem(rng))
    W = np.eye(3)
    with pytest.raises(ValueError, match=r"^X must have shape \(n, T, d\)"):
        attention_gradient(W, v, X[0], z, y)
    with pytest.raises(ValueError, match=r"^z must have shape"):
        attention_gradient(W, v, X, z[:, :2], y)
    with pytest.raises(ValueError, match=r"^y must hold labels -1 or \+1"):
        attention_gradient(W, v, X, z, np.abs(y) * 2)
    with pytest.raises(ValueError, match=r"^v must have shape"):
        attention_gradient(W, v[:2], X, z, y)
    with pytest.raises(ValueError, match=r"^W must have shape"):
        attention_gradient(np.eye(2), v, X, z, y)
    X[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match=r"^X contains NaN"):
        attention_gradient(W, v, X, z, y)


def test_gradient_direction_is_exact_when_attention_saturates():
    """At large ‖W‖ the naive softmax backward loses the selected token's term to rounding; ours
    must match a 60-digit reference in direction."""
    import mpmath

    mpmath.mp.dps = 60
    rng = np.random.default_rng(3)
    X, z, y, v = random_problem(rng, n=3, T=4, d=3)
    W = 40.0 * torch.as_tensor(rng.standard_normal((3, 3)))
    grad_W = risk_and_gradients(W, v, X, z, y)[1]

    def mp_vec(a):
        return [mpmath.mpf(float(x)) for x in a]

    ref = [[mpmath.mpf(0)] * 3 for _ in range(3)]
    for i in range(3):
        xs = [mp_vec(X[i, t]) for t in range(4)]
        zi, vi = mp_vec(z[i]), mp_vec(v)
        a = [
            sum(xs[t][j] * mpmath.mpf(float(W[j, k])) * zi[k] for j in range(3) for k in range(3))
            for t in range(4)
        ]
        e = [mpmath.exp(at - max(a)) for at in a]
        s = [et / sum(e) for et in e]
        h = [sum(xs[t][j] * vi[j] for j in range(3)) for t in range(4)]
        f = sum(s[t] * h[t] for t in range(4))
        c = -1 / (1 + mpmath.exp(mpmath.mpf(float(y[i])) * f)) * mpmath.mpf(float(y[i])) / 3
        for t in range(4):
            for j in range(3):
                for k in range(3):
                    ref[j][k] += c * s[t] * (h[t] - f) * xs[t][j] * zi[k]
    ref_norm = mpmath.sqrt(sum(r**2 for row in ref for r in row))
    ref_dir = torch.tensor([[float(r / ref_norm) for r in row] for row in ref])
    ours = grad_W / grad_W.norm()
    torch.testing.assert_close(ours, ref_dir, rtol=0, atol=1e-10)
    # the textbook backward (autograd through torch.softmax) is visibly off here
    Wn = W.clone().requires_grad_()
    naive = torch.nn.functional.softplus(
        -y * (torch.softmax(X @ Wn @ z.unsqueeze(-1), 1).squeeze(-1) * (X @ v)).sum(-1)
    ).mean()
    (g,) = torch.autograd.grad(naive, Wn)
    assert (g / g.norm() - ref_dir).abs().max() > 1e-6


def test_the_classifier_follows_its_input_dtype_and_prints_its_sizes():
    """dtype=None: v's dtype, else torch's default (float64 in this test session, set by
    conftest; float32 in a fresh interpreter)."""
    assert AttentionClassifier(3).dtype == torch.get_default_dtype()
    assert AttentionClassifier(3, v=torch.ones(3, dtype=torch.float64)).W.dtype == torch.float64
    assert AttentionClassifier(3, dtype=torch.float16).v.dtype == torch.float16
    model = AttentionClassifier(3, v=torch.ones(3, dtype=torch.float32))
    assert model.W.dtype == torch.float32
    X, z = torch.randn(5, 4, 3, dtype=torch.float32), torch.randn(5, 3, dtype=torch.float32)
    assert model(X, z).dtype == torch.float32
    with pytest.raises(TypeError, match=r"X is float64 but the model is float32"):
        model(X.double(), z.double())
    with pytest.raises(TypeError, match="dtype must be a real floating"):
        AttentionClassifier(3, dtype=torch.int64)
    assert repr(AttentionClassifier(3, parameterization="KQ", m=2, train_head=True)) == (
        "AttentionClassifier(d=3, K, Q: 3×2 each (W = K Qᵀ), query='cross', head v: trained, "
        f"dtype={str(torch.get_default_dtype()).removeprefix('torch.')})"
    )
