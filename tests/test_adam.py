"""The engine's Adam (`optim.adam`, `engine.steppers.AdamRuns`): torch.optim.Adam's update with
its moments rescaled. Where nothing underflows it is torch's step bit for bit (float64 and
float32); where torch's g² underflows (v → 0, the step m/ε explodes or stops) it stays
within 64 ulps of Adam computed in 80-bit extended precision, the bound torch's own Adam meets
against that reference where nothing underflows."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from attnbias.data import gaussian_unit
from attnbias.engine import RunBatch, RunSpec, simulate
from attnbias.engine.steppers import AdamRuns, adam_options
from attnbias.optim import registry
from attnbias.optim.adam import Moments, adam_step_, exponent_band, ldexp
from attnbias.optim.algorithm import Algorithm

BETAS = (0.9, 0.95)
ULP_BOUND = 64  # of the largest |w_T − w_0|: torch's own Adam meets it where nothing underflows


def gradients(steps: int, log_scale: float, seed: int = 0):
    """A hand-sized problem: T gradients G_t·exp(c_t) of a 3×4 weight, c_t falling by 5 from
    `log_scale` over the T steps, and W₀."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((steps, 3, 4))
    return G, log_scale + np.linspace(0.0, -5.0, steps), rng.standard_normal((3, 4))


def rescaled(G, c, w0, dtype, lr=0.1, eps=1e-300, **options):
    """The rescaled Adam over the gradients (one run); the final W and its moments."""
    w = torch.tensor(w0, dtype=dtype)[None].clone()
    moments = Moments.zeros(w, options.get("amsgrad", False))
    b1, b2 = BETAS
    for t, (g, m) in enumerate(zip(G, c), 1):
        adam_step_(
            w,
            torch.tensor(g, dtype=dtype)[None],
            torch.tensor([m], dtype=dtype),
            moments,
            step_size=lr / (1 - b1**t),
            bias_correction2_sqrt=(1 - b2**t) ** 0.5,
            one_minus_beta1=1 - b1,
            beta2=b2,
            one_minus_beta2=1 - b2,
            eps=eps,
            weight_decay=options.get("weight_decay", 0.0),
        )
    return w[0].numpy(), moments


def torch_adam(G, c, w0, dtype, lr=0.1, eps=1e-300, **options):
    """torch.optim.Adam on the same gradients, in the gradient's own scale exp(c)·G."""
    p = torch.nn.Parameter(torch.tensor(w0, dtype=dtype))
    optimizer = torch.optim.Adam([p], lr=lr, betas=BETAS, eps=eps, **options)
    for g, m in zip(G, c):
        p.grad = torch.tensor(g, dtype=dtype) * torch.exp(torch.tensor(m, dtype=dtype))
        optimizer.step()
    return p.detach().numpy()


def extended(G, c, w0, lr=0.1, eps=1e-300):
    """Adam in numpy's long double (x87 80-bit: exponent to ±16382, so nothing underflows)."""
    L = np.longdouble
    w, b1, b2 = np.array(w0, dtype=L), L(BETAS[0]), L(BETAS[1])
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, (g, s) in enumerate(zip(G, c), 1):
        g = np.array(g, dtype=L) * np.exp(L(s))
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        w = w - L(lr) / (1 - b1**t) * m / (np.sqrt(v) / np.sqrt(1 - b2**t) + L(eps))
    return w


def step_error_ulps(w, reference, w0) -> float:
    """max |w − reference| in ulps of the largest |reference − w₀| (float64)."""
    moved = np.abs((reference - w0).astype(np.float64)).max()
    return float(
        np.abs(w.astype(np.float64) - reference.astype(np.float64)).max() / np.spacing(moved)
    )


needs_extended = pytest.mark.skipif(
    np.finfo(np.longdouble).nexp < 15, reason="numpy's long double is float64 on this platform"
)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    "options", [{}, {"amsgrad": True}, {"weight_decay": 0.01}], ids=["plain", "amsgrad", "wd"]
)
def test_where_nothing_underflows_the_step_is_torchs_bit_for_bit(dtype, options):
    G, c, w0 = gradients(30, -3.0)
    eps = 1e-8
    ours, moments = rescaled(G, c, w0, dtype, eps=eps, **options)
    assert moments.exponent.item() == 0  # never rescaled: torch's own operations
    np.testing.assert_array_equal(ours, torch_adam(G, c, w0, dtype, eps=eps, **options))


@needs_extended
@pytest.mark.parametrize("log_scale", [-200.0, -400.0])
def test_where_g_squared_underflows_the_rescaled_step_stays_adams(log_scale):
    """|g| ~ e^−400 ≈ 1e-174: g² ≈ 1e-348 is 0 in float64, so torch's v is 0 and its step is
    m/ε = 1e126 (ε = 1e-300, the configs'); the rescaled step stays within the bound of
    Adam computed without underflow. At e^−200 (g² ≈ 1e-174, still normal) both are within
    it: the rescaling changes nothing that did not underflow."""
    G, c, w0 = gradients(30, log_scale)
    reference = extended(G, c, w0)
    ours, moments = rescaled(G, c, w0, torch.float64)
    assert moments.exponent.item() < -exponent_band(torch.float64)  # rescaled
    assert step_error_ulps(ours, reference, w0) <= ULP_BOUND
    theirs = step_error_ulps(torch_adam(G, c, w0, torch.float64), reference, w0)
    assert (theirs <= ULP_BOUND) == (log_scale == -200.0)


@needs_extended
def test_the_reference_bound_is_the_one_torch_meets_unrescaled():
    """The yardstick: torch's Adam, where nothing underflows, against the same reference."""
    G, c, w0 = gradients(30, 0.0)
    assert step_error_ulps(torch_adam(G, c, w0, torch.float64), extended(G, c, w0), w0) <= 64


def test_float32_underflow_rescaled_matches_float64_adam():
    """float32: |g| ~ e^−60 ≈ 1e-26, g² ≈ 1e-52 underflows (smallest normal 1e-38), torch's
    float32 step is m/ε; the rescaled float32 step agrees with float64 Adam (nothing
    underflows there) to float32's rounding."""
    G, c, w0 = gradients(30, -60.0)
    eps = 1e-30
    ours, _ = rescaled(G, c, w0, torch.float32, eps=eps)
    exact = torch_adam(G, c, w0, torch.float64, eps=eps)
    np.testing.assert_allclose(ours, exact, rtol=0, atol=64 * np.spacing(np.float32(3.0)))
    theirs = torch_adam(G, c, w0, torch.float32, eps=eps)
    assert not np.allclose(theirs, exact, atol=1.0)  # torch's float32 step broke


def test_an_exact_power_of_two_rescaling_leaves_the_moments_adams():
    """The moments are Adam's own, times a power of two: m = m̃·2^k, v = ṽ·4^k."""
    G, c, w0 = gradients(10, -200.0)
    _, moments = rescaled(G, c, w0, torch.float64)
    truth = moments.true_scale()
    p = torch.nn.Parameter(torch.tensor(w0))
    optimizer = torch.optim.Adam([p], lr=0.1, betas=BETAS, eps=1e-300)
    for g, m in zip(G, c):
        p.grad = torch.tensor(g) * np.exp(m)
        optimizer.step()
    state = optimizer.state[p]
    for key in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(truth[key][0], state[key], rtol=1e-12, atol=0)


def first_steps(scale: float, monkeypatch=None, family: str = "") -> np.ndarray:
    """max |W_t − W₀| for t = 1, 2, 3 of Adam (η = 0.5, ε = 1e-300, the configs' β) from W₀ =
    `scale` × the direction 300 SignGD steps reach (the logits separate: the gradient falls
    like e^(−margin·scale)), stepped by the engine as shipped, or by its stepper `family`."""
    data = gaussian_unit(4, 5, 6, seed=0)
    w0 = 0.01 * np.random.default_rng(0).standard_normal((6, 6))
    direction = trained(RunSpec({"i": 0}, data, Algorithm("S", "sign", 0.05), 300, {"W": w0}))
    adam = Algorithm("Adam", "adam", 0.5, options={"eps": 1e-300, "betas": list(BETAS)})
    if family:
        monkeypatch.setitem(registry.RULES, "adam", replace(registry.RULES["adam"], family=family))
    init = {"W": scale * direction / np.linalg.norm(direction)}
    w = trained(RunSpec({"i": 0}, data, adam, 3, init))
    return np.abs(w[1:] - w[0]).reshape(3, -1).max(1)


def trained(spec: RunSpec) -> np.ndarray:
    out = {}

    def keep(done):
        out["W"] = done.snapshots["W"][0].numpy()

    simulate(RunBatch.from_specs([spec]), np.arange(spec.steps + 1), keep)
    return out["W"] if spec.steps < 300 else out["W"][-1]


def test_the_engine_steps_where_torchs_arithmetic_breaks(monkeypatch):
    """At ‖W₀‖ = 1300 the gradient is ~1e-200: torch's arithmetic (the engine's old stepper,
    `TorchRuns`: torch.optim.Adam on exp(c)·G) squares it to 0, so v = 0 and its step is
    m/ε ~ 1e101; the rescaled Adam takes Adam's first step, η·sign(g): max |ΔW| = η."""
    ours = first_steps(1300.0)
    assert first_steps(1300.0, monkeypatch, "torch")[0] > 1e50
    assert ours[0] == 0.5 and ours[2] < 3 * 0.5


def test_past_its_epsilon_the_rescaled_adam_stops_as_adam_does():
    """What rescaling does not remove: at ‖W₀‖ = 2400 the gradient is far below ε = 1e-300,
    and Adam's own step η·m̂/(√v̂ + ε) ≈ η·m̂/ε is 0 in float64: the ε regime of the configured
    Adam (reexamine-adam's `stalled` reason), not an underflow."""
    assert np.all(first_steps(2400.0) == 0.0)


def test_batched_runs_match_torchs_adam_each_alone():
    """Runs with different rates, betas, ε, decays (per-run columns) and lengths (runs leave
    the batch mid-way, keeping their moments) agree with torch's Adam on each run alone."""
    from attnbias.engine.single_run import run_reference

    algorithms = [
        Algorithm("A", "adam", 0.01, options={"eps": 1e-12}),
        Algorithm("B", "adam", 0.02, lr_decay=0.5, options={"betas": [0.8, 0.9]}),
        Algorithm("C", "adam", 0.03, options={"weight_decay": 0.05}),
        Algorithm("D", "adam", 0.02, options={"weight_decay": 0.1, "decoupled_weight_decay": True}),
    ]
    rng = np.random.default_rng(5)
    specs = [
        RunSpec({"i": i}, gaussian_unit(4, 5, 6, seed=i), a, 12 + 3 * i,
                {"W": rng.standard_normal((6, 6))})
        for i, a in enumerate(algorithms)
    ]  # fmt: skip
    out = {}

    def keep(done):
        for j, i in enumerate(done.index):
            out[int(i)] = done.snapshots["W"][j].numpy()

    batch = RunBatch.from_specs(specs)
    assert isinstance(batch.stepper, AdamRuns)
    simulate(batch, np.arange(22), keep)
    for i, spec in enumerate(specs):
        reference = run_reference(spec, np.arange(spec.steps + 1))["W"]
        assert np.abs(reference[-1] - reference[0]).max() > 0.05, i  # moved
        np.testing.assert_allclose(
            out[i], reference, rtol=0, atol=1e-12, err_msg=spec.algorithm.name
        )


def test_an_option_the_rescaled_adam_lacks_is_refused_by_name():
    with pytest.raises(ValueError, match=r"options \['maximize'\] are not implemented"):
        adam_options(Algorithm("A", "adam", 0.1, options={"maximize": True}))


def test_only_adams_stored_runs_change_key():
    """The rescaled arithmetic is Adam's rule version 1: its runs' keys change, no other's."""
    G = gaussian_unit(4, 5, 6, seed=0)
    init = {"W": np.zeros((6, 6))}
    adam = RunSpec({"i": 0}, G, Algorithm("A", "adam", 0.1), 5, init)
    sign = RunSpec({"i": 0}, G, Algorithm("S", "sign", 0.1), 5, init)
    assert adam.record["rule_version"] == 1
    assert "rule_version" not in sign.record


def adam_run_from(scale: float, steps: int, eps: float) -> np.ndarray:
    """W_t (t = 0..steps) of Adam (η = 0.5, the configs' β, ε = `eps`) stepped by the engine
    from W₀ = `scale` × the direction 300 SignGD steps reach (the gradient ~ e^(−margin·scale))."""
    data = gaussian_unit(4, 5, 6, seed=0)
    w0 = 0.01 * np.random.default_rng(0).standard_normal((6, 6))
    direction = trained(RunSpec({"i": 0}, data, Algorithm("S", "sign", 0.05), 300, {"W": w0}))
    adam = Algorithm("Adam", "adam", 0.5, options={"eps": eps, "betas": list(BETAS)})
    init = {"W": scale * direction / np.linalg.norm(direction)}
    return trained(RunSpec({"i": 0}, data, adam, steps, init))


def test_the_first_step_with_eps_0_is_eta_sign_g_and_a_zero_gradient_does_not_move():
    """By hand: m̂₁ = g, v̂₁ = g², so Adam's first step with ε = 0 is η·g/|g| = η·sign(g); a
    coordinate whose gradient is exactly 0 has m̂ = v̂ = 0 and does not move (not 0/0)."""
    g = torch.tensor([[[3.0, -0.5], [0.0, 2e-9]]], dtype=torch.float64)
    w = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]], dtype=torch.float64)
    w0 = w.clone()
    b1, b2 = BETAS
    adam_step_(w, g, torch.zeros(1, dtype=torch.float64), Moments.zeros(w),
               step_size=0.1 / (1 - b1), bias_correction2_sqrt=(1 - b2) ** 0.5,
               one_minus_beta1=1 - b1, beta2=b2, one_minus_beta2=1 - b2, eps=0.0)  # fmt: skip
    np.testing.assert_array_equal(w.numpy(), (w0 - 0.1 * torch.sign(g)).numpy())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_eps_0_is_torchs_adam_bit_for_bit_where_torchs_arithmetic_is_finite(dtype):
    """torch.optim.Adam(eps=0) divides 0 by 0 where a coordinate's gradient is always 0 (NaN
    there) and is finite elsewhere: there the rescaled Adam is torch's bit for bit; where
    torch's is NaN it leaves the coordinate as it was."""
    G, c, w0 = gradients(30, -3.0)
    G[:, 1, :] = 0.0
    ours, moments = rescaled(G, c, w0, dtype, eps=0.0)
    theirs = torch_adam(G, c, w0, dtype, eps=0.0)
    assert moments.exponent.item() == 0
    assert np.isnan(theirs[1]).all() and np.isfinite(np.delete(theirs, 1, axis=0)).all()
    np.testing.assert_array_equal(np.delete(ours, 1, axis=0), np.delete(theirs, 1, axis=0))
    np.testing.assert_array_equal(ours[1], w0[1].astype(ours.dtype))


@pytest.mark.parametrize("dtype, log_scale", [(torch.float64, -1800.0), (torch.float32, -200.0)])
def test_eps_0_steps_where_the_gradients_exponent_is_beyond_twice_the_dtypes(dtype, log_scale):
    """|g| ~ e^−1800 ≈ 2^−2600 (float64), e^−200 ≈ 2^−290 (float32): ε·2^(−k) with ε = 0 is 0,
    not 0·inf = NaN (2^2600 overflows as a float); Adam's first step is η·sign(g) (to the
    rounding of m̂/√v̂ = g/|g|)."""
    G, c, w0 = gradients(1, log_scale)
    ours, moments = rescaled(G, c, w0, dtype, eps=0.0)
    assert moments.exponent.item() < -2 * (int(np.log2(torch.finfo(dtype).max)) + 1)
    expected = torch.tensor(w0, dtype=dtype) - 0.1 * torch.sign(torch.tensor(G[0], dtype=dtype))
    ulp = np.spacing(np.abs(expected.numpy()).max())
    np.testing.assert_allclose(ours, expected.numpy(), rtol=0, atol=4 * ulp)


def test_eps_0_runs_past_where_it_was_nan_and_keeps_growing():
    """From ‖W₀‖ = 5000 (the gradient ~ 2^−2500: ldexp's two factors 2^1255 overflowed, and
    ε·inf was NaN for ε = 0) Adam with ε = 0 stays finite and ‖W_t‖ still grows at the end;
    ε = 1e-300 does not move there (its ε regime)."""
    w = adam_run_from(5000.0, 40, eps=0.0)
    norms = np.linalg.norm(w.reshape(len(w), -1), axis=1)
    assert np.isfinite(w).all()
    assert np.all(np.diff(norms[-10:]) > 0) and norms[-1] > norms[0] + 1.0
    stopped = adam_run_from(5000.0, 3, eps=1e-300)
    assert np.all(stopped == stopped[0])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_ldexp_is_exact_and_never_nan_beyond_the_dtypes_exponent_range(dtype):
    """x·2^e as math.ldexp has it (0 or ±inf where it under- or overflows), for e up to past
    three times the dtype's largest exponent; 0·2^e is 0 at any e."""
    emax = int(np.log2(torch.finfo(dtype).max)) + 1
    tiny = torch.finfo(dtype).smallest_normal / 2**10
    values = [0.0, 1.0, -3.0, tiny, float(torch.finfo(dtype).max)]
    x = torch.tensor([values], dtype=dtype)
    for e in (0, 5, -5, emax + 3, -emax - 3, 2 * emax - 1, 2 * emax + 30, -2 * emax - 30,
              3 * emax, -3 * emax, 10 * emax, -10 * emax):  # fmt: skip
        got = ldexp(x, torch.tensor([float(e)], dtype=dtype))[0]
        want = torch.tensor([exact_ldexp(v, e) for v in values], dtype=torch.float64).to(dtype)
        assert not torch.isnan(got).any(), e
        torch.testing.assert_close(got, want, rtol=0, atol=0, msg=f"e = {e}")


def exact_ldexp(v: float, e: int) -> float:
    """v·2^e in float64, or ±inf where it overflows (math.ldexp raises)."""
    try:
        return math.ldexp(v, e)
    except OverflowError:
        return math.copysign(math.inf, v)
