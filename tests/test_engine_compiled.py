"""The compiled engine step (numba, `engine.compiled`) against the torch step it stands in for:
whole runs of every rule of the mirror-descent core at every recorded step, float64 and
float32; the fall-back to torch where a dual iterate needs the log-domain redo, where a batch
is not covered and where numba is missing."""

import logging
import math
import sys

import numpy as np
import pytest
import torch

from attnbias import compiled_backend
from attnbias.engine import Algorithm, RunBatch, compiled, simulate, union_grid
from attnbias.losses import get_loss
from test_engine_fused import MIRROR, STEEPEST, specs_of

pytestmark = pytest.mark.usefixtures("one_thread")
needs_numba = pytest.mark.skipif(
    compiled.kernels() is None, reason="numba is not installed (pip install 'attnbias[compiled]')"
)
TOLERANCE = {torch.float64: compiled.RUN_RTOL, torch.float32: compiled.RUN_RTOL_FLOAT32}


def trajectories(specs, backend, dtype=torch.float64, steps_grid=None):
    """Every run's recorded W (run index → (len(grid), d, d)) and its final parameters."""
    grid = steps_grid or union_grid([(s.steps, s.grid_points) for s in specs])
    recorded, final = {}, {}

    def keep(done):
        for j, i in enumerate(done.index):
            recorded[int(i)] = done.snapshots["W"][j].double().numpy()
            final[int(i)] = {k: w[j] for k, w in done.final.items()}

    simulate(RunBatch.from_specs(specs, dtype=dtype), grid, keep, backend=backend)
    return recorded, final


def relative_gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per recorded step, the largest difference relative to the reference run's largest
    entry at that step."""
    scale = np.abs(b).reshape(len(b), -1).max(1).clip(min=1e-300)
    return np.abs(a - b).reshape(len(b), -1).max(1) / scale


@needs_numba
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("batched", [True, False], ids=["one-batch", "batch-per-rule"])
def test_compiled_runs_stay_within_the_stated_bound_of_torch_at_every_recorded_step(dtype, batched):
    """Every rule (plain, loss, per-tensor and global normalisation, momentum, Polyak; p < 2,
    = 2, > 2) over 1,000 steps in one mixed batch (per-run p and rule), and 300 steps with
    each rule in a batch of its own (the torch step's uniform fast paths)."""
    groups = (
        [specs_of(MIRROR, "W", 1000)]
        if batched
        else [specs_of([a], "W", 300, seed=10 + i) for i, a in enumerate(MIRROR)]
    )
    worst = 0.0
    for specs in groups:
        assert compiled.steps_compiled(RunBatch.from_specs(specs, dtype=dtype))
        fast, _ = trajectories(specs, "compiled", dtype)
        reference, _ = trajectories(specs, "torch", dtype)
        for r, spec in enumerate(specs):
            gap = relative_gap(fast[r], reference[r])
            assert np.isfinite(reference[r]).all(), spec.algorithm.name
            assert gap.max() <= TOLERANCE[dtype], (spec.algorithm.name, gap.max())
            worst = max(worst, gap.max())
            moved = np.abs(reference[r][-1] - reference[r][0]).max()
            assert moved > 0.1, f"{spec.algorithm.name} barely moved: the test would be vacuous"
    assert worst > 0.0, "bit for bit: the compiled step did not run"


@needs_numba
@pytest.mark.parametrize("needs_redo", [False, True], ids=["in-range", "needs-redo"])
def test_a_stretch_that_needs_the_log_domain_redo_is_torchs_bit_for_bit(needs_redo):
    """Entries of W at 1e-200 in a column whose gradient is exactly 0 (that coordinate of
    every z_i is 0): θ = |w|² underflows, the torch step redoes those entries in the log domain
    and keeps w. The compiled step hands the stretch to torch, from the state before it: from
    there the runs are torch's bit for bit (and the tiny entries kept)."""
    algorithms = [a for a in MIRROR if a.p > 2.0]
    specs = specs_of(algorithms, "W", 40)
    if needs_redo:
        for s in specs:
            s.init["W"][:, 0] = 1e-200
            s.problem.z[:, 0] = 0.0
    fast, fast_final = trajectories(specs, "compiled")
    reference, _ = trajectories(specs, "torch")
    for r in range(len(specs)):
        if needs_redo:
            assert np.array_equal(fast[r], reference[r])
            if specs[r].algorithm.p == 3.0:
                assert (fast_final[r]["W"][:, 0] == 1e-200).all()
        else:
            assert not np.array_equal(fast[r], reference[r])
            assert relative_gap(fast[r], reference[r]).max() <= compiled.RUN_RTOL


@needs_numba
def test_a_polyak_step_at_or_below_its_optimal_loss_is_no_step_as_in_torch():
    """L − L* ≤ 0: Polyak's divisor divides by 0 (∞: no step), as IEEE arithmetic does, not
    a ZeroDivisionError."""
    specs = specs_of([Algorithm("Polyak-above", "polyak", 5.0, f_star=100.0)], "W", 10)
    fast, _ = trajectories(specs, "compiled")
    reference, _ = trajectories(specs, "torch")
    assert np.array_equal(fast[0], reference[0])
    assert (fast[0] == fast[0][0]).all()  # no step


@needs_numba
@pytest.mark.parametrize(
    "algorithms, kind",
    [(MIRROR[:4], "KQ"), (MIRROR[:4], "W+v"), (STEEPEST, "W")],
    ids=["K-Q", "trained-head", "steepest"],
)
def test_batches_the_compiled_step_does_not_cover_step_with_torch(algorithms, kind):
    specs = specs_of(algorithms, kind, 30)
    assert not compiled.steps_compiled(RunBatch.from_specs(specs))
    fast, _ = trajectories(specs, "compiled")
    reference, _ = trajectories(specs, "torch")
    for r in range(len(specs)):
        assert np.array_equal(fast[r], reference[r])


@needs_numba
def test_the_compiled_step_is_the_default_and_the_variable_chooses(monkeypatch):
    batch = RunBatch.from_specs(specs_of(MIRROR[:2], "W", 5))
    monkeypatch.delenv(compiled_backend.BACKEND_VARIABLE, raising=False)
    assert compiled.steps_compiled(batch)
    monkeypatch.setenv(compiled_backend.BACKEND_VARIABLE, "torch")
    assert not compiled.steps_compiled(batch)
    assert compiled.steps_compiled(batch, "compiled")  # an explicit argument wins
    monkeypatch.setenv(compiled_backend.BACKEND_VARIABLE, "jax")
    with pytest.raises(ValueError, match=compiled_backend.BACKEND_VARIABLE):
        compiled.steps_compiled(batch)


def test_without_numba_the_engine_says_so_once_and_steps_with_torch(monkeypatch, caplog):
    """numba unimportable: one line at INFO, naming the extra, and torch's runs bit for bit."""
    import attnbias.engine

    monkeypatch.setitem(sys.modules, "numba", None)  # import numba: ImportError
    monkeypatch.delitem(sys.modules, "attnbias.engine.kernels_numba", raising=False)
    monkeypatch.delattr(attnbias.engine, "kernels_numba", raising=False)
    compiled.kernels.cache_clear()
    try:
        specs = specs_of(MIRROR[:3], "W", 20)
        with caplog.at_level(logging.INFO, logger="attnbias.engine.compiled"):
            fast, _ = trajectories(specs, "compiled")
            again, _ = trajectories(specs, "compiled")
        notices = [r.getMessage() for r in caplog.records if r.name == compiled.logger.name]
        assert len(notices) == 1 and "attnbias[compiled]" in notices[0], notices
        assert "\n" not in notices[0]
    finally:
        compiled.kernels.cache_clear()
    reference, _ = trajectories(specs, "torch")
    for r in range(len(specs)):
        assert np.array_equal(fast[r], reference[r]) and np.array_equal(again[r], fast[r])


@needs_numba
def test_exp_or_zero_is_maths_exp_bit_for_bit():
    """The kernel's exp skips libm's call only where libm's result is +0: the same bits
    everywhere, around the threshold, in the subnormal range, at ±inf, NaN and ±0."""
    kernels = compiled.kernels()
    values = np.concatenate([
        np.linspace(-760.0, -700.0, 200_001),
        np.nextafter(kernels.UNDERFLOW, [-np.inf, np.inf]),
        [kernels.UNDERFLOW, -745.1332191019412, -745.1332191019411, -1e300, -np.inf, np.inf],
        [np.nan, 0.0, -0.0, 1.0, 708.0, 710.0],
        -np.logspace(-300, 300, 2001),
    ])  # fmt: skip
    for x in values:
        got, want = kernels.exp_or_zero(x), math.exp(x) if not x >= 709.0 else math.inf
        assert np.array([got]).view(np.int64) == np.array([want]).view(np.int64) or (
            np.isnan(got) and np.isnan(want)
        ), x


def ulps_apart(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """How many float64 values lie between got and want (both ≥ 0 or NaN: 0 where both NaN)."""
    both_nan = np.isnan(got) & np.isnan(want)
    apart = np.abs(got.view(np.int64) - want.view(np.int64))
    return np.where(both_nan, 0, apart)


@needs_numba
def test_exp_lanes_is_within_one_ulp_of_libms_exp_everywhere():
    """The kernels' branch-free exp (the softmax's and the gradient's, packed into vector
    lanes) against libm's through exp_or_zero: at most 1 ulp apart over the whole range (the
    subnormal results included), mostly the same bits, and the same where e^x is 0, 1, +inf
    or NaN (below UNDERFLOW, ±0, above the overflow threshold, ±inf, NaN; the exact e^0 = 1 of
    every softmax's top token)."""
    kernels = compiled.kernels()
    rng = np.random.default_rng(0)
    exact = np.array([  # where e^x is 1, 0, +inf or NaN
        0.0, -0.0, 1e-300, -1e-300, 5e-324, np.inf, -np.inf, np.nan,
        np.nextafter(kernels.OVERFLOW, np.inf), 710.0, 1e300, -1e300,
        np.nextafter(kernels.UNDERFLOW, -np.inf), -745.1332191019412,
    ])  # fmt: skip
    values = np.concatenate([
        exact,
        [1.0, -1.0, kernels.OVERFLOW, -708.4, -708.39, -745.1332191019411, kernels.UNDERFLOW],
        rng.uniform(-760.0, 720.0, 300_000),
        rng.uniform(-750.0, -700.0, 100_000),  # subnormal results
        rng.uniform(-1.0, 1.0, 100_000),
        -np.logspace(-300, 300, 2001),
        np.logspace(-300, 2.85, 2001),
    ])  # fmt: skip
    got = np.array([kernels.exp_lanes(x) for x in values])
    want = np.array([kernels.exp_or_zero(x) for x in values])  # libm's, bit for bit (above)
    apart = ulps_apart(got, want)
    assert apart.max() <= 1, values[apart.argmax()]
    assert (apart == 0).mean() > 0.8  # most the same bits: it is libm's function, not a sketch
    assert kernels.exp_lanes(0.0) == 1.0 and kernels.exp_lanes(-0.0) == 1.0
    assert np.array_equal(got[: len(exact)], want[: len(exact)], equal_nan=True)


@needs_numba
def test_log_lanes_and_log1p_lanes_are_within_one_ulp_of_libms():
    """The kernels' branch-free log (the softmax's log Σ e) and log1p (the logistic loss's
    log|ℓ'|) against libm's: at most 1 ulp apart over the whole range of positive floats,
    subnormals included, mostly the same bits; log's edges exactly (−inf at ±0, NaN below 0
    and at NaN, inf at inf, 0 at 1)."""
    kernels = compiled.kernels()
    rng = np.random.default_rng(1)
    positive = np.concatenate([
        np.exp(rng.uniform(-745.0, 709.0, 200_000)),
        rng.uniform(0.5, 2.0, 100_000),  # around the split at √2
        10.0 ** rng.uniform(-323.5, -307.0, 20_000),  # subnormal
        [1.0, 2.0, 0.5, np.sqrt(2.0), np.nextafter(np.sqrt(2.0), 0.0), 5e-324,
         np.nextafter(np.sqrt(2.0), 3.0), np.finfo(np.float64).tiny, np.finfo(np.float64).max],
    ])  # fmt: skip
    positive = np.concatenate([positive, np.nextafter(positive[-4:-1], np.inf)])
    got = np.array([kernels.log_lanes(x) for x in positive])
    libm = np.array([math.log(x) for x in positive])  # Python's math: the C library's
    apart = ulps_apart(np.abs(got), np.abs(libm))
    assert np.all(np.sign(got) == np.sign(libm))
    assert apart.max() <= 1, positive[apart.argmax()]
    assert (apart == 0).mean() > 0.9
    edges = np.array([0.0, -0.0, np.inf, -1.0, -np.inf, np.nan, 1.0])
    want = [-np.inf, -np.inf, np.inf, np.nan, np.nan, np.nan, 0.0]
    assert np.array_equal([kernels.log_lanes(x) for x in edges], want, equal_nan=True)

    unit = np.concatenate([rng.uniform(0.0, 1.0, 100_000), np.exp(rng.uniform(-745, 0, 100_000))])
    got = np.array([kernels.log1p_lanes(x) for x in unit])
    apart = ulps_apart(got, np.array([math.log1p(x) for x in unit]))
    assert apart.max() <= 1, unit[apart.argmax()]
    assert kernels.log1p_lanes(0.0) == 0.0 and kernels.log1p_lanes(5e-324) == 5e-324


@needs_numba
@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
def test_log_abs_derivative_lanes_is_within_two_ulp_of_libms(loss):
    """log|ℓ'(u)| of the compiled step's offset, branch-free, over margins from −800 to 800:
    the logistic's −softplus(u) = −(max(u, 0) + log1p(e^{−|u|})) within 2 ulp of libm's
    (through exp_lanes and log1p_lanes; torch's own softplus takes u above 20 as u, 2e-9
    short), the other two exactly the loss's."""
    kernels = compiled.kernels()
    u = np.concatenate([
        np.random.default_rng(2).uniform(-50.0, 50.0, 50_000), np.linspace(-800, 800, 4001),
        [0.0, -0.0, 1e-300, 36.0, 37.5, 745.0, -745.0],
    ])  # fmt: skip
    got = np.array([kernels.log_abs_derivative_lanes(x, compiled.LOSS_CODES[loss]) for x in u])
    if loss == "logistic":
        want = np.array([-(max(x, 0.0) + math.log1p(math.exp(-abs(x)))) for x in u])
    else:
        want = get_loss(loss).log_abs_derivative(torch.from_numpy(u)).numpy()
    apart = ulps_apart(np.abs(got), np.abs(want))
    assert apart.max() <= (2 if loss == "logistic" else 0), u[apart.argmax()]


@needs_numba
def test_cbrt_lanes_is_within_one_ulp_of_the_exact_cube_root():
    """The kernels' branch-free cube root (ℓ1.75's exponents 4/3 and 7/3 are thirds) against
    the cube root in extended precision over the positive floats, subnormals included (the C
    library's cbrt is up to 3 ulp off it here); exact at 0, 1, 8, 27, inf and NaN."""
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("numpy's long double is float64 here: no extended precision to compare with")
    kernels = compiled.kernels()
    rng = np.random.default_rng(4)
    x = np.concatenate([
        np.exp(rng.uniform(-745.0, 709.0, 200_000)), rng.uniform(0.0, 8.0, 50_000),
        10.0 ** rng.uniform(-323.5, -307.0, 20_000), [np.finfo(np.float64).max, 5e-324],
    ])  # fmt: skip
    got = np.array([kernels.cbrt_lanes(v) for v in x])
    apart = ulps_apart(got, np.cbrt(x.astype(np.longdouble)).astype(np.float64))
    assert apart.max() <= 1, x[apart.argmax()]
    assert (apart == 0).mean() > 0.8
    edges = [0.0, 1.0, 8.0, 27.0, np.inf, np.nan]
    assert np.array_equal([kernels.cbrt_lanes(v) for v in edges], np.cbrt(edges), equal_nan=True)


@needs_numba
@pytest.mark.parametrize("m", [1, 2, 4, 5, 7, 8])
def test_a_third_power_is_within_4_ulp_of_the_exact_power(m):
    """x^(m/3) by the cube root (`power` of kind 6, which `kind_of` gives the float nearest
    m/3) against the exact power in extended precision: within 4 ulp, where pow of the rounded
    exponent is tens to hundreds of ulp off for small or large x. Other exponents keep their
    kinds."""
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("numpy's long double is float64 here: no extended precision to compare with")
    kernels = compiled.kernels()
    kind = kernels.kind_of(m / 3)
    assert kind == (6, m)
    rng = np.random.default_rng(m)
    x = np.concatenate([rng.uniform(0.0, 1.0, 20_000), np.exp(rng.uniform(-200.0, 200.0, 20_000))])
    got = np.array([kernels.power(v, m / 3, *kind) for v in x])
    exact = (np.cbrt(x.astype(np.longdouble)) ** m).astype(np.float64)
    assert ulps_apart(got, exact).max() <= 4
    assert ulps_apart(x ** (m / 3), exact).max() > 8  # pow of the rounded m/3: 33 to 400 ulp
    for e, other in ((3.0, 3), (0.5, 2), (1.5, 4), (10 / 3, 5), (2.2, 5), (1 / 3 + 1e-9, 5)):
        assert kernels.kind_of(e)[0] == other, e
