"""Polyak's L − L* over the optimal tokens, computed scale-safely (`losses.optimal_token_excess`):
it agrees with the difference of the two losses where that is accurate, stays accurate where
that difference rounds to 0, and so the uncapped Polyak step keeps moving on example1 (the
engine's torch and compiled steps, and the optimiser class with `hand_excess`)."""

import mpmath
import numpy as np
import pytest
import torch

from attnbias.data import example1
from attnbias.engine import Algorithm, RunBatch, RunSpec, compiled, simulate
from attnbias.losses import (
    LOSSES,
    get_loss,
    log_optimal_token_excess,
    margins_ordered,
    optimal_token_excess,
    risk,
)
from attnbias.model import AttentionClassifier
from attnbias.optim import PolyakStep

pytestmark = pytest.mark.usefixtures("one_thread")
UNCAPPED = 1e300  # the experiments' stand-in for γ_b = ∞
# where the naive difference is accurate (excess ≥ 1e-4·|L*|), the two agree to this relative
# bound: the naive one's rounding, a few ulps of L* over an excess ≥ 1e-4·L*, is ≤ ~1e-11
AGREEMENT_RTOL = 1e-9
# against 400-digit arithmetic (L − L* ~ 1e-304 of L* at a logit gap of 700), with float64
# softmax scores (a few ulps each) as its input
ACCURACY_RTOL = 1e-12


def margins(rng, n, T):
    """γ (n, T) with each sample's optimal token the largest, and the optimal tokens."""
    gamma = rng.uniform(-1.0, 1.0, (n, T))
    opt = rng.integers(0, T, n)
    gamma[np.arange(n), opt] = gamma.max(1) + rng.uniform(0.1, 1.0, n)
    return gamma, opt


def naive_excess(scores, gamma, opt, loss):
    u = (scores * gamma).sum(-1)
    return risk(u, loss) - risk(gamma.gather(-1, opt.unsqueeze(-1)).squeeze(-1), loss)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_the_stable_excess_agrees_with_the_naive_difference_where_that_is_accurate(loss):
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(50):
        gamma, opt = margins(rng, 6, 5)
        logits = rng.normal(0.0, 3.0, (6, 5))
        scores = torch.softmax(torch.as_tensor(logits), -1)
        gamma, opt = torch.as_tensor(gamma), torch.as_tensor(opt)
        naive = naive_excess(scores, gamma, opt, loss)
        l_star = risk(gamma.gather(-1, opt.unsqueeze(-1)).squeeze(-1), loss)
        if abs(naive) < 1e-4 * abs(l_star):
            continue
        stable = optimal_token_excess(scores, gamma, opt, loss)
        assert abs(stable - naive) <= AGREEMENT_RTOL * abs(naive), (loss, stable, naive)
        checked += 1
    assert checked >= 40, "too few cases where the naive difference is accurate"


def exact_excess(logits: np.ndarray, gamma: np.ndarray, opt: np.ndarray, loss: str):
    """L − L* in 400-digit arithmetic from the logits themselves."""
    value = {
        "logistic": lambda u: mpmath.log1p(mpmath.exp(-u)),
        "exponential": lambda u: mpmath.exp(-u),
        "correlation": lambda u: -u,
    }[loss]
    with mpmath.workdps(400):
        total = mpmath.mpf(0)
        for a, g, o in zip(logits, gamma, opt):
            e = [mpmath.exp(mpmath.mpf(float(x))) for x in a]
            u = sum(ei * mpmath.mpf(float(gi)) for ei, gi in zip(e, g)) / sum(e)
            total += value(u) - value(mpmath.mpf(float(g[o])))
        return total / len(opt)


def far_case(seed: int, gap: float):
    """Margins γ (3, 4), optimal tokens, and logits whose optimal token leads by `gap`."""
    rng = np.random.default_rng(seed)
    gamma, opt = margins(rng, 3, 4)
    logits = rng.uniform(0.0, 1.0, (3, 4))
    logits[np.arange(3), opt] += gap
    return gamma, opt, logits


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("gap", [40.0, 200.0, 700.0])
def test_the_stable_excess_is_accurate_where_the_naive_difference_is_zero(loss, gap):
    """Logit gaps of 40 to 700 (other tokens' scores ~1e-18 to ~1e-304): the difference of the
    two losses is 0, the stable excess is within ACCURACY_RTOL of the 400-digit one."""
    gamma, opt, logits = far_case(1, gap)
    scores = torch.softmax(torch.as_tensor(logits), -1)
    g, o = torch.as_tensor(gamma), torch.as_tensor(opt)
    assert naive_excess(scores, g, o, loss) == 0.0, "the naive difference is not 0 here"
    stable = float(optimal_token_excess(scores, g, o, loss))
    exact = exact_excess(logits, gamma, opt, loss)
    assert stable > 0.0
    assert abs(stable - exact) <= ACCURACY_RTOL * abs(exact), (stable, float(exact))


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("gap", [0.5, 40.0, 700.0, 800.0, 5000.0])
def test_the_log_excess_is_the_log_of_the_exact_one_beyond_the_float_range(loss, gap):
    """log(L − L*) from the scores' logs (`log_optimal_token_excess`) against the log of the
    400-digit excess, to 1e-12 (a relative error of the excess of 1e-12), also at logit gaps
    of 800 and 5,000 where L − L* itself (~e^−gap) underflows to 0 in float64."""
    gamma, opt, logits = far_case(2, gap)
    log_s = torch.log_softmax(torch.as_tensor(logits), -1)
    g, o = torch.as_tensor(gamma), torch.as_tensor(opt)
    assert bool(margins_ordered(g, o))
    value = float(log_optimal_token_excess(log_s, g, o, loss))
    with mpmath.workdps(400):
        exact = mpmath.log(exact_excess(logits, gamma, opt, loss))
    assert abs(value - float(exact)) <= ACCURACY_RTOL * max(1.0, abs(float(exact))), (value, exact)
    if gap >= 800.0:
        assert float(optimal_token_excess(log_s.exp(), g, o, loss)) == 0.0


def test_each_loss_excess_is_its_difference_of_values():
    u_star = torch.tensor([0.5, 1.0, 3.0])
    delta = torch.tensor([-0.3, -1e-3, 0.2])
    for loss in LOSSES.values():
        expected = loss.value(u_star + delta) - loss.value(u_star)
        torch.testing.assert_close(loss.excess(u_star, delta), expected, rtol=1e-12, atol=0.0)
    assert get_loss("logistic").excess(torch.tensor(1.0), torch.tensor(-1e-300)) > 0.0


def uncapped_spec(steps: int) -> RunSpec:
    rng = np.random.default_rng(0)
    return RunSpec(
        {},
        example1(4, 4, 32, seed=1),
        Algorithm("Polyak", "polyak", UNCAPPED, f_star="optimal"),
        steps,
        {"W": 0.1 * rng.standard_normal((32, 32))},
    )


def recorded_W(spec: RunSpec, grid: np.ndarray, backend: str) -> np.ndarray:
    out = {}

    def keep(done):
        out["W"] = done.snapshots["W"][0].numpy()

    simulate(RunBatch.from_specs([spec]), grid, keep, backend=backend)
    return out["W"]


@pytest.mark.parametrize("backend", ["torch", "compiled"])
def test_uncapped_polyak_keeps_moving_on_example1_for_the_whole_run(backend):
    """With L − L* the difference of two losses the step was 0 from step ~40 on (W stopped at
    ‖W‖_max ≈ 13); now W changes between every two recorded steps up to the last, 2,000."""
    if backend == "compiled" and compiled.kernels() is None:
        pytest.skip("numba is not installed (pip install 'attnbias[compiled]')")
    grid = np.unique(np.r_[np.arange(0, 100, 10), np.geomspace(100, 2000, 20).astype(int)])
    W = recorded_W(uncapped_spec(2000), grid, backend)
    moves = np.abs(np.diff(W, axis=0)).reshape(len(W) - 1, -1).max(1)
    assert (moves > 0).all(), list(zip(grid[1:], moves))
    assert np.abs(W[-1]).max() > 100.0  # far past where the naive step stopped


def test_the_compiled_step_takes_the_same_excess_as_torch():
    if compiled.kernels() is None:
        pytest.skip("numba is not installed (pip install 'attnbias[compiled]')")
    grid = np.unique(np.geomspace(1, 1000, 30).astype(int))
    torch_W = recorded_W(uncapped_spec(1000), grid, "torch")
    compiled_W = recorded_W(uncapped_spec(1000), grid, "compiled")
    scale = np.abs(torch_W).reshape(len(grid), -1).max(1)
    gap = np.abs(compiled_W - torch_W).reshape(len(grid), -1).max(1) / scale
    assert gap.max() <= compiled.RUN_RTOL, gap.max()


def test_the_optimiser_class_keeps_stepping_with_the_handed_excess():
    """PolyakStep with hand_excess on an AttentionClassifier: the step size is > 0 and W
    changes at every one of 300 steps (without it the step is 0 from step ~40)."""
    problem = example1(4, 4, 32, seed=1)
    X, z, y, v = problem.tensors()
    model = AttentionClassifier(32, v=v, init_scale=0.1, generator=torch.Generator().manual_seed(0))
    opt = torch.as_tensor(problem.opt)
    gamma = y.unsqueeze(-1) * torch.einsum("ntd,d->nt", X, v)
    optimizer = PolyakStep(model.parameters(), lr=UNCAPPED, f_star=0.0)
    for _ in range(300):
        optimizer.zero_grad()
        loss = risk(y * model(X, z), "logistic")
        loss.backward()
        with torch.no_grad():
            optimizer.hand_excess(optimal_token_excess(model.scores(X, z), gamma, opt, "logistic"))
        before = model.W.detach().clone()
        optimizer.step(lambda loss=loss: loss)
        assert optimizer.param_groups[0]["step_size"] > 0.0
        assert not torch.equal(model.W.detach(), before)
    assert model.W.detach().abs().max() > 100.0


def test_a_handed_excess_is_used_once_and_checked():
    w = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    optimizer = PolyakStep([w], lr=10.0, f_star=5.0)
    w.grad = torch.ones(3, dtype=torch.float64)
    optimizer.hand_excess(0.3)  # the loss (1.0) is below f_star: only the excess steps
    optimizer.step(lambda: torch.tensor(1.0))
    assert optimizer.param_groups[0]["step_size"] == pytest.approx(0.1)
    optimizer.step(lambda: torch.tensor(1.0))  # no excess handed: L − L* < 0, no step
    assert optimizer.param_groups[0]["step_size"] == 0.0
    with pytest.raises(TypeError, match="excess must be a real number"):
        optimizer.hand_excess("0.3")
    with pytest.raises(ValueError, match="excess must be one finite number"):
        optimizer.hand_excess(float("nan"))
    with pytest.raises(ValueError, match="excess must be one finite number"):
        optimizer.hand_excess(torch.ones(2))


def test_only_runs_of_polyak_with_the_optimal_f_star_change_their_store_key():
    spec = uncapped_spec(10)
    assert spec.excess_over_optimal and spec.record["polyak_gap"] == "optimal_token_excess"
    fixed = RunSpec({}, spec.problem, Algorithm("P", "polyak", 1.0, f_star=0.3), 10, spec.init)
    assert not fixed.excess_over_optimal and "polyak_gap" not in fixed.record
