"""Polyak's step in the log domain (`optim.divisors.polyak_log_step`): every engine backend
takes η_t∇L from log‖∇L‖ and log(L − L*), so it equals the direct formula
min(γ_b, (L − L*)/(c‖∇L‖²))·∇L wherever that one is finite, stays finite and exact (against
400-digit arithmetic) at logit gaps where ∇L and L − L* underflow, and γ_b = ∞ is exact: the
uncapped run keeps moving for as long as it lasts."""

import math

import mpmath
import numpy as np
import pytest
import torch

from attnbias.data import example1
from attnbias.engine import Algorithm, RunBatch, RunSpec, compiled, simulate
from attnbias.engine.grid import log_grid
from attnbias.experiment_registry import load_config
from attnbias.optim import PolyakStep
from attnbias.optim.divisors import polyak_log_step
from attnbias.store import config_key

pytestmark = pytest.mark.usefixtures("one_thread")
# every (γ_b, c) of a batch, and one plain-GD run beside them (a batch that mixes step rules)
SETTINGS = [(cap, c) for cap in (1.0, 1e4, math.inf) for c in (0.5, 2.0)]
# the engine's step against the direct formula from the same state: rounding only
DIRECT_RTOL = 1e-12
# against 400-digit arithmetic on the same float64 state (logits ~800 carry ~1e-13 each)
EXACT_RTOL = 1e-10
D = 16  # example1 needs d ≥ nT


def problem():
    return example1(4, 4, D, seed=3)


def specs_at(W: np.ndarray) -> list[RunSpec]:
    algorithms = [
        Algorithm(f"Polyak {cap} {c}", "polyak", cap, c=c, f_star="optimal") for cap, c in SETTINGS
    ]
    algorithms.append(Algorithm("GD", "gd", 0.1))
    return [RunSpec({}, problem(), a, 1, {"W": W.copy()}) for a in algorithms]


def backends():
    out = ["fused", "unfused", "compiled"]
    if torch.cuda.is_available():
        out.append("cuda")
    return out


def one_step(W: np.ndarray, backend: str) -> np.ndarray:
    """W after one step of every run of `specs_at(W)` by `backend`, (runs, d, d)."""
    if backend == "compiled" and compiled.kernels() is None:
        pytest.skip("numba is not installed (pip install 'attnbias[compiled]')")
    device = "cuda" if backend == "cuda" else None
    batch = RunBatch.from_specs(specs_at(W), device=device)
    with torch.inference_mode():
        if backend == "compiled":
            assert compiled.covers(batch) and compiled.advance(batch, 1)
        else:
            batch.step(fused_step=backend != "unfused")
    return batch.params[0].cpu().numpy()


def direct_steps(W: np.ndarray) -> list[np.ndarray | None]:
    """−min(γ_b, (L − L*)/(c‖∇L‖²))·∇L of each Polyak setting from the true-scale gradient and
    L − L* (`Stack.risk_and_gradients`), or None where that formula is not finite (a
    gradient or L − L* at or below the normal range, or η_t beyond it)."""
    batch = RunBatch.from_specs(specs_at(W)[:1])
    excess, g, _ = batch.data.risk_and_gradients(torch.as_tensor(W).unsqueeze(0))
    excess, g = float(excess[0]), g[0].numpy()
    norm = float(np.linalg.norm(g))
    tiny = np.finfo(np.float64).tiny
    out = []
    for cap, c in SETTINGS:
        uncapped = excess / (c * norm * norm) if norm > 0 else math.inf
        if not (excess > tiny and norm > tiny and 0.0 < uncapped < math.inf):
            out.append(None)
            continue
        out.append(-min(cap, uncapped) * g)
    return out


def run_states(cap: float, steps: int) -> np.ndarray:
    """The recorded iterates of one Polyak run (γ_b = cap, c = 1) on `problem()`."""
    rng = np.random.default_rng(0)
    spec = RunSpec(
        {},
        problem(),
        Algorithm("P", "polyak", cap, f_star="optimal"),
        steps,
        {"W": 0.1 * rng.standard_normal((D, D))},
        grid_points=25,
    )
    return recorded(spec)


def recorded(spec: RunSpec, backend: str | None = None) -> np.ndarray:
    """The iterates W of one run at its own log grid, (len(grid), d, d)."""
    out = {}
    grid = log_grid(spec.steps, spec.grid_points)
    simulate(
        RunBatch.from_specs([spec]), grid, lambda done: out.update(done.snapshots), backend=backend
    )
    return out["W"][0].numpy()


@pytest.mark.parametrize("backend", backends())
def test_the_log_domain_step_is_the_direct_formula_where_that_is_finite(backend):
    """From every recorded state of an uncapped and a capped run, one step of each (γ_b, c)
    by this backend equals −min(γ_b, (L − L*)/(c‖∇L‖²))·∇L to DIRECT_RTOL of the step (and a
    few ulps of W, which the difference W_{t+1} − W_t rounds to)."""
    checked = 0
    for cap in (math.inf, 1e4):
        for W in run_states(cap, 300):
            after = one_step(W, backend)
            for k, expected in enumerate(direct_steps(W)):
                if expected is None:
                    continue
                step = after[k] - W
                bound = DIRECT_RTOL * np.abs(expected).max() + 8 * np.spacing(np.abs(W).max())
                assert np.abs(step - expected).max() <= bound, (backend, SETTINGS[k], checked)
                checked += 1
    assert checked >= 100


def gaps(W: np.ndarray) -> np.ndarray:
    """Each sample's logit gap between its optimal token and the next largest logit."""
    P = problem()
    logits = np.einsum("ntd,de,ne->nt", P.X, W, P.z)
    opt = logits[np.arange(len(P.opt)), P.opt]
    others = logits.copy()
    others[np.arange(len(P.opt)), P.opt] = -np.inf
    return opt - others.max(1)


def far_state(smallest_gap: float) -> np.ndarray:
    """A state of the uncapped run scaled so that its smallest logit gap is `smallest_gap`
    (its other tokens' scores ~e^−gap: below float64's range beyond ~745)."""
    W = run_states(math.inf, 300)[-1]
    assert gaps(W).min() > 0
    return W * (smallest_gap / gaps(W).min())


def exact_uncapped_step(W: np.ndarray, c: float) -> np.ndarray:
    """−(L − L*)/(c‖∇L‖²)·∇L in 400-digit arithmetic on the float64 state W (logistic loss,
    L* with all attention on the optimal tokens)."""
    P = problem()
    n, T, d = P.X.shape
    with mpmath.workdps(400):
        mp = np.vectorize(lambda x: mpmath.mpf(float(x)), otypes=[object])
        X, z, Wm = mp(P.X), mp(P.z), mp(W)
        gamma = [[P.y[i] * mpmath.mpf(float(P.X[i, t] @ P.v)) for t in range(T)] for i in range(n)]

        def loss(u):
            return mpmath.log1p(mpmath.exp(-u))

        excess = mpmath.mpf(0)
        grad = np.full((d, d), mpmath.mpf(0), dtype=object)
        for i in range(n):
            Wz = Wm.dot(z[i])
            a = [X[i, t].dot(Wz) for t in range(T)]
            top = max(a)
            e = [mpmath.exp(x - top) for x in a]
            s = [x / sum(e) for x in e]
            u = sum(st * gt for st, gt in zip(s, gamma[i]))
            excess += loss(u) - loss(gamma[i][int(P.opt[i])])
            weight = -1 / (1 + mpmath.exp(u))  # ℓ'(u)
            r = [weight * st * (gt - u) for st, gt in zip(s, gamma[i])]  # ∂ℓ/∂a_t
            xr = sum(rt * X[i, t] for t, rt in enumerate(r))
            grad = grad + np.outer(xr, z[i])
        excess /= n
        grad = grad / n
        square = sum(x * x for x in grad.ravel())
        step = -(excess / (c * square)) * grad
        return np.vectorize(float)(step).astype(np.float64)


@pytest.mark.parametrize("backend", backends())
def test_at_logit_gaps_of_800_the_uncapped_step_is_finite_and_exact(backend):
    """Logit gaps of 800: ∇L (~e^−800) and L − L* underflow in float64, so the direct formula
    has no step to give (the engine took none before); the log-domain step is finite, nonzero
    and within EXACT_RTOL of the 400-digit one, for both c."""
    W = far_state(800.0)
    assert all(step is None for step in direct_steps(W))
    after = one_step(W, backend)
    for k, (cap, c) in enumerate(SETTINGS):
        if cap != math.inf:
            continue
        step = after[k] - W
        expected = exact_uncapped_step(W, c)
        assert np.isfinite(step).all() and np.abs(step).max() > 0.0
        bound = EXACT_RTOL * np.abs(expected).max() + 8 * np.spacing(np.abs(W).max())
        assert np.abs(step - expected).max() <= bound, (backend, c)


def uncapped_norms(backend: str, steps: int) -> np.ndarray:
    if backend == "compiled" and compiled.kernels() is None:
        pytest.skip("numba is not installed (pip install 'attnbias[compiled]')")
    rng = np.random.default_rng(0)
    spec = RunSpec(
        {},
        example1(4, 4, 64, seed=1),
        Algorithm("Polyak", "polyak", math.inf, f_star="optimal"),
        steps,
        {"W": 0.1 * rng.standard_normal((64, 64))},
        grid_points=60,
    )
    W = recorded(spec, backend)
    return np.linalg.norm(W.reshape(len(W), -1), axis=1)


@pytest.mark.parametrize("backend", ["compiled", pytest.param("torch", marks=pytest.mark.slow)])
def test_uncapped_polyak_keeps_moving_for_20000_steps(backend):
    """γ_b = ∞ on example1 (ngd-fixed's size): ‖W_t‖ strictly increases between every two
    recorded steps up to the last, 20,000 (the 1e300 stand-in stopped growing at its pace by
    step ~700, where it bound as a cap at logit gaps ~691)."""
    norms = uncapped_norms(backend, 20_000)
    assert (np.diff(norms) > 0).all(), norms


def test_the_rule_in_logs():
    """log η_t = min(log γ_b, log(L − L*) − log c − 2 log‖g‖); a zero gradient takes the cap;
    no gap (−∞) no step; NaN stays NaN."""
    log_norm = torch.tensor([-400.0, -400.0, -math.inf, -1.0, math.nan])
    log_gap = torch.tensor([-399.0, -399.0, -5.0, -math.inf, 0.0])
    cap = torch.tensor([math.inf, 1e6, math.inf, math.inf, 1.0])
    got = polyak_log_step(log_norm, log_gap, 2.0, cap)
    expected = [-399.0 - math.log(2.0) + 800.0, math.log(1e6), math.inf, -math.inf]
    assert got[:4].tolist() == pytest.approx(expected, rel=1e-15)
    assert math.isnan(got[4])


def test_the_optimiser_class_takes_an_infinite_cap_and_refuses_an_unrepresentable_step():
    """PolyakStep(lr=∞) steps by (L − L*)/(c‖g‖²) where that is a number; where its divisor
    underflows (a gradient of 1e-170: η_t ~ 1e340) it raises instead of taking no step."""
    w = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    optimizer = PolyakStep([w], lr=math.inf, f_star=0.0, c=2.0)
    w.grad = torch.full((3,), 0.5, dtype=torch.float64)
    optimizer.step(lambda: torch.tensor(3.0, dtype=torch.float64))
    assert optimizer.param_groups[0]["step_size"] == pytest.approx(3.0 / (2.0 * 0.75))
    w.grad = torch.full((3,), 1e-170, dtype=torch.float64)
    before = w.detach().clone()
    with pytest.raises(FloatingPointError, match="uncapped step size"):
        optimizer.step(lambda: torch.tensor(1.0, dtype=torch.float64))
    assert torch.equal(w.detach(), before)
    w.grad = torch.zeros(3, dtype=torch.float64)  # a zero gradient: no step, whatever η_t
    optimizer.step(lambda: torch.tensor(1.0, dtype=torch.float64))
    assert torch.equal(w.detach(), before)


def test_configs_write_an_infinite_cap_as_inf_and_only_a_cap_may_be_infinite():
    for given in (math.inf, "inf"):
        algorithm = Algorithm.from_dict({"name": "P", "optimizer": "polyak", "lr": given})
        assert algorithm.lr == math.inf and algorithm.to_dict()["lr"] == "inf"
        assert Algorithm.from_dict(algorithm.to_dict()) == algorithm
    finite = Algorithm("P", "polyak", 1e300).to_dict()
    assert finite["lr"] == 1e300  # runs of finite caps keep their keys
    with pytest.raises(ValueError, match="lr must be finite"):
        Algorithm("G", "gd", math.inf)
    with pytest.raises(ValueError, match="lr must be a real number"):
        Algorithm("G", "gd", "inf")


def test_a_config_keys_an_infinite_cap_one_way_however_written():
    """ngd-fixed's Polyak table with lr = inf (TOML) or "inf": one config key, the table
    keyed as "inf" (JSON has no ∞), the algorithm's γ_b ∞; the config as shipped (uncapped
    since issue 29's ngd rows) is that key."""
    shipped = load_config("ngd-fixed", quick=True)
    keys = set()
    for lr in (math.inf, "inf"):
        tables = [
            dict(t, lr=lr) if t["optimizer"] == "polyak" else t
            for t in shipped.as_written("algorithms")
        ]
        config = load_config("ngd-fixed", quick=True, overrides={"algorithms": tables})
        assert config.algorithms[-1].lr == math.inf
        assert config.to_dict()["algorithms"][-1]["lr"] == "inf"
        keys.add(config_key(config.to_dict()))
    assert len(keys) == 1 and config_key(shipped.to_dict()) in keys


def joint_norms(fused: bool, steps: int) -> np.ndarray:
    """‖W_t‖_F and the risk at every recorded step of an uncapped Polyak run that trains the
    head too (ngd-joint's dm data, L* = 0, 1/c = 8): its risk underflows float64 early."""
    from attnbias.data import dm

    rng = np.random.default_rng(0)
    spec = RunSpec(
        {},
        dm(n=8, d=16, opt_norm=3.0, noise=1.0, seed=1),
        Algorithm("Polyak", "polyak", math.inf, c=1 / 8, f_star=0.0),
        steps,
        {"W": 0.01 * rng.standard_normal((16, 16)), "v": 0.01 * rng.standard_normal(16)},
        grid_points=40,
    )
    out = {}
    grid = log_grid(spec.steps, spec.grid_points)
    simulate(RunBatch.from_specs([spec]), grid, lambda done: out.update(done.snapshots),
             fused=fused, backend="torch")  # fmt: skip
    W = out["W"][0].numpy()
    return np.linalg.norm(W.reshape(len(W), -1), axis=1)


@pytest.mark.parametrize("fused", [True, False])
def test_joint_polyak_keeps_moving_after_its_risk_underflows(fused):
    """With a trained head L* = 0 and L itself underflows (margins beyond ~745): its log is
    taken from the margins (`losses.log_risk`), so the step stays finite and W keeps growing
    between every two recorded steps; from log(L) = −∞ the step was 0 and the run froze."""
    norms = joint_norms(fused, 2_000)
    assert (np.diff(norms) > 0).all(), norms
