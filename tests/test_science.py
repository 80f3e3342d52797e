"""The seeds' claims, checked end to end with the public optimisers and solvers (float64).

Each test trains from a random initialisation and compares the direction reached with the
max-margin solution that the theory names; each would fail if the optimiser, the gradient or
the solver were wrong (e.g. the ℓ1.75 run does not reach its SVM with the naive softmax gradient).
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnbias.data import dm, example1, gaussian_unit, linear_separable
from attnbias.metrics import alignment, directional_bregman, token_score
from attnbias.model import AttentionClassifier, risk_and_gradients
from attnbias.optim import MirrorDescent, NormalizedGD, PolyakStep
from attnbias.svm import att_svm, head_svm, selected_tokens

P_STEPS = {1.75: 1500, 2.0: 2000, 3.0: 20000}  # the MD paper's setting

pytestmark = pytest.mark.usefixtures("one_thread")


def md_runs(p, steps, seeds):
    """Normalized ℓp-MD (η = 0.1, W₀ ~ N(0,1)) on gaussian_unit(6, 8, 10) for several seeds at
    once: one parameter per seed in one MirrorDescent, so per-tensor normalisation is per run."""
    problems = [gaussian_unit(6, 8, 10, seed=s) for s in seeds]
    X, z, y, v = (torch.stack(a) for a in zip(*(P.tensors() for P in problems)))
    Ws = [
        torch.nn.Parameter(torch.randn(10, 10, generator=torch.Generator().manual_seed(s)))
        for s in seeds
    ]
    opt = MirrorDescent(Ws, lr=0.1, p=p, normalize="per_tensor")
    for _ in range(steps):
        grads = risk_and_gradients(torch.stack([W.detach() for W in Ws]), v, X, z, y)[1]
        for W, g in zip(Ws, grads):
            W.grad = g
        opt.step()
    return problems, [W.detach() for W in Ws]


@pytest.mark.slow
@pytest.mark.parametrize("p", sorted(P_STEPS))
def test_md_converges_to_its_own_lp_att_svm(p):
    problems, Ws = md_runs(p, P_STEPS[p], seeds=(1, 2, 3))
    for P, W in zip(problems, Ws):
        alpha = selected_tokens(W, P.X, P.z)
        div = {q: directional_bregman(att_svm(P.X, P.z, alpha, q).W, W, q).item() for q in P_STEPS}
        assert div[p] < 0.05, div
        assert div[p] == min(div.values()), div


def _fit(problem, model, opt, steps, polyak=False):
    X, z, y, _ = problem.tensors()
    z = z if model.query == "cross" else None
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.softplus(-y * model(X, z)).mean()
        loss.backward()
        opt.step(lambda loss=loss: loss) if polyak else opt.step()
        losses.append(loss.item())
    return losses


def _fixed_head_model(P, seed, scale=0.01):
    g = torch.Generator().manual_seed(seed)
    return AttentionClassifier(P.X.shape[2], query=P.query, v=P.v, init_scale=scale, generator=g)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ngd_global_convergence_on_example1(seed):
    P = example1(seed=seed)
    W_mm = att_svm(P.X, P.z, P.opt, 2.0).W
    f_star = F.softplus(-torch.ones(1)).item()  # all attention on the optimal tokens, γ = 1

    def run(make, steps, polyak=False):
        model = _fixed_head_model(P, seed)
        losses = _fit(P, model, make(model.parameters()), steps, polyak)
        return model.W.detach(), losses

    W_ngd, _ = run(lambda ps: NormalizedGD(ps, lr=0.1), 1000)
    W_gd, _ = run(lambda ps: torch.optim.SGD(ps, lr=1.0), 1000)
    gap_ngd = 1 - alignment(W_ngd, W_mm).item()
    gap_gd = 1 - alignment(W_gd, W_mm).item()
    assert gap_ngd <= 0.01
    assert gap_ngd < gap_gd / 10, (gap_ngd, gap_gd)
    assert token_score(W_ngd, P.X, P.z, P.opt).item() > 0.999
    # Polyak is ahead of NGD early
    _, loss_ngd = run(lambda ps: NormalizedGD(ps, lr=0.1), 20)
    _, loss_polyak = run(lambda ps: PolyakStep(ps, lr=10.0, f_star=f_star), 20, polyak=True)
    assert loss_polyak[-1] - f_star < (loss_ngd[-1] - f_star) / 2


@pytest.mark.parametrize("seed", [0, 1])
def test_joint_ngd_on_dm_aligns_head_and_attention(seed):
    P = dm(seed=seed)
    model = AttentionClassifier(
        P.X.shape[2], query="self", train_head=True, dtype=torch.float64
    )  # zero init: no v to take the dtype from
    losses = _fit(P, model, NormalizedGD(model.parameters(), lr=0.1, normalize="per_tensor"), 500)
    assert losses[-1] < 1e-10
    v_mm = head_svm(P.X, P.y, P.opt, 2.0).v
    W_mm = att_svm(P.X, P.z, P.opt, 2.0).W
    assert alignment(model.v.detach(), v_mm, dim=-1).item() > 0.999
    assert alignment(model.W.detach(), W_mm).item() > 0.999


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_kq_factorisation_prefers_the_nuclear_norm(seed):
    P = gaussian_unit(6, 8, 10, seed=seed)
    aligned = {}
    for parameterization, scale in (("KQ", 0.1), ("W", 0.01)):
        g = torch.Generator().manual_seed(seed)
        model = AttentionClassifier(
            10, parameterization=parameterization, v=P.v, init_scale=scale, generator=g
        )
        _fit(P, model, NormalizedGD(model.parameters(), lr=0.05), 3000)
        W = model.attention_matrix().detach()
        alpha = selected_tokens(W, P.X, P.z)
        aligned[parameterization] = {
            norm: alignment(W, att_svm(P.X, P.z, alpha, norm).W).item() for norm in ("nuc", "fro")
        }
    assert aligned["KQ"]["nuc"] > aligned["KQ"]["fro"] + 0.05, aligned
    assert aligned["W"]["fro"] > aligned["W"]["nuc"] + 0.05, aligned
    assert aligned["W"]["fro"] > 0.98, aligned


@pytest.mark.slow
@pytest.mark.parametrize("p", [1.5, 3.0])
def test_lp_md_on_linear_data_reaches_the_lp_max_margin_classifier(p):
    P = linear_separable(seed=0)
    X, _, y, _ = P.tensors()
    w = torch.nn.Parameter(torch.zeros(X.shape[-1]))
    opt = MirrorDescent([w], lr=0.1, p=p, normalize="per_tensor")
    for _ in range(5000):
        opt.zero_grad()
        F.softplus(-y * (X[:, 0] @ w)).mean().backward()
        opt.step()
    alpha = np.zeros(len(P.y), dtype=int)
    div = {
        q: directional_bregman(head_svm(P.X, P.y, alpha, q).v, w.detach(), q, dim=-1).item()
        for q in (1.5, 2.0, 3.0)
    }
    assert div[p] < 1e-3, div
    assert div[p] == min(div.values()), div
