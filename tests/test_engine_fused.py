"""The fused engine step against the unfused one, chunked sweeps against in-memory ones, the
memory check, and the engine on CUDA (tests marked `cuda`: `python -m pytest -m cuda
tests/test_engine_fused.py` on a machine with a GPU; they skip, saying so, without one)."""

import math
from functools import partial

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from attnbias import compiled_backend
from attnbias.data import gaussian_unit
from attnbias.engine import (
    Algorithm,
    RunBatch,
    RunSpec,
    fused,
    graphs,
    memory,
    simulate,
    sweep,
    union_grid,
)
from attnbias.engine.simulate import advance_torch
from attnbias.engine.sweep import run_sweep
from attnbias.store import ResultsStore

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def torch_backend(monkeypatch):
    """The torch step, the reference: the compiled one is tested against it in
    tests/test_engine_compiled.py."""
    monkeypatch.setenv(compiled_backend.BACKEND_VARIABLE, "torch")


# Every step rule of the mirror-descent core (plain, per-tensor, global, loss, Polyak; with and
# without momentum; p < 2, = 2, > 2), and the steepest-descent family, whose gradients the
# fused kernel forms too.
MIRROR = [
    Algorithm("GD", "gd", 0.5),
    Algorithm("GD-loss", "gd", 0.1, normalize="loss"),
    Algorithm("NGD", "ngd", 0.1),
    Algorithm("NGD-mom", "ngd", 0.1, momentum=0.9),
    Algorithm("NGD-per-tensor", "ngd", 0.1, normalize="per_tensor"),
    Algorithm("Polyak", "polyak", 5.0, f_star=0.0),
    Algorithm("MD-1.75", "md", 0.1, p=1.75, normalize="per_tensor"),
    Algorithm("MD-3", "md", 0.1, p=3.0, normalize="per_tensor"),
    Algorithm("MD-3-global", "md", 0.1, p=3.0, normalize="global"),
    Algorithm("MD-1.5-plain", "md", 0.05, p=1.5),
    Algorithm("MD-2.5", "md", 0.05, p=2.5, normalize="per_tensor"),
]
STEEPEST = [
    Algorithm("Sign", "sign", 0.02),
    Algorithm("Spectral", "spectral", 0.1, momentum=0.5),
    Algorithm("Steepest-3", "steepest", 0.1, norm=3.0),
]
KINDS = ["W", "W+v", "KQ"]


def usable(algorithms, kind):
    """The spectral direction is for matrices: not with a trained head (a vector)."""
    return [a for a in algorithms if not (kind == "W+v" and a.optimizer == "spectral")]


def init_of(kind, d, rng):
    if kind == "W":
        return {"W": rng.standard_normal((d, d))}
    if kind == "W+v":
        return {"W": 0.3 * rng.standard_normal((d, d)), "v": 0.3 * rng.standard_normal(d)}
    return {"K": 0.5 * rng.standard_normal((d, d)), "Q": 0.5 * rng.standard_normal((d, d))}


def specs_of(algorithms, kind, steps, seed=0, n=4, T=5, d=6):
    rng = np.random.default_rng(seed)
    return [
        RunSpec({"i": i}, gaussian_unit(n, T, d, seed=seed + i), a, steps, init_of(kind, d, rng))
        for i, a in enumerate(algorithms)
    ]


def ulps_apart(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest difference of each run's entries in ulps of the run's largest entry."""
    scale = b.abs().flatten(1).amax(1).clamp_min(torch.finfo(b.dtype).tiny)
    gap = (a - b).abs().flatten(1).amax(1) / scale / torch.finfo(b.dtype).eps
    return float(gap.max())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("family", [MIRROR, STEEPEST], ids=["mirror", "steepest"])
def test_a_fused_step_is_within_ulps_of_the_unfused_one_at_every_recorded_step(kind, family, dtype):
    """From the unfused trajectory's state at each recorded step, the fused and the unfused
    gradients agree to fused.GRADIENT_ULPS of their largest entry, and the parameters after
    one step of the mirror-descent core to fused.STEP_ULPS (the steepest directions of the
    other family, sign(m) and U Vᵀ, are not continuous in m: they get the same gradients).
    Every rule in one batch, and each in a batch of its own (a batch of one rule takes the
    uniform fast paths). In float64 and in float32 (ulps of each)."""
    steps = 60
    grid = set(union_grid([(steps, 30)]).tolist())
    family = usable(family, kind)
    batches = [specs_of(family, kind, steps)] + [
        specs_of([a], kind, steps, seed=10 + i) for i, a in enumerate(family)
    ]
    worst = {"gradients": 0.0, "steps": 0.0}
    for specs in batches:
        batch = RunBatch.from_specs(specs, dtype=dtype)
        for t in range(steps):
            if t in grid:
                everything = np.ones(len(batch), dtype=bool)
                pair = [batch.take(everything), batch.take(everything)]
                for a, b in zip(pair[0].gradients(True)[1], pair[1].gradients(False)[1]):
                    worst["gradients"] = max(worst["gradients"], ulps_apart(a, b))
                if specs[0].algorithm.family == "mirror":
                    pair[0].step(fused_step=True)
                    pair[1].step(fused_step=False)
                    for a, b in zip(pair[0].params, pair[1].params):
                        worst["steps"] = max(worst["steps"], ulps_apart(a, b))
            batch.step(fused_step=False)
        moved = max(float((w - w0).abs().max()) for w, w0 in zip(batch.params, init_params(specs)))
        assert moved > 1e-3, "the runs did not move: the test would be vacuous"
    assert worst["gradients"] <= fused.GRADIENT_ULPS, worst
    assert worst["steps"] <= fused.STEP_ULPS, worst


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("inner", [5, fused.SMALL_PRODUCT // 12 + 1], ids=["small", "large"])
def test_the_cpu_batched_product_is_torch_bmm_on_views_of_the_same_memory(dtype, inner):
    """`fused.bmm` (numpy's matmul on the CPU for small float32/64 products, torch.bmm
    otherwise) writes a @ b into `out` and returns it, for transposed (strided) operands too."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(7, inner, 3, generator=gen).to(dtype)
    b = torch.randn(7, 4, inner, generator=gen).to(dtype).mT  # (7, inner, 4), not contiguous
    out = torch.full((7, 3, 4), float("nan"), dtype=dtype)
    got = fused.bmm(a.mT, b, out=out)
    assert got is out
    if dtype == torch.bfloat16 or inner == fused.SMALL_PRODUCT // 12 + 1:  # torch's own
        assert torch.equal(got, torch.bmm(a.mT, b))
    else:
        want = torch.bmm(a.mT.double(), b.double())
        tolerance = 4 * inner * torch.finfo(dtype).eps * float(want.abs().max())
        assert float((got.double() - want).abs().max()) <= tolerance


@pytest.mark.filterwarnings("error")
def test_the_cpu_batched_product_passes_nan_and_inf_as_torch_does_and_quietly():
    """A diverged run's NaN or inf meets zeros in a product: NaN, as in torch.bmm, and no
    numpy warning (divergence is the run's status, not a message)."""
    a = torch.zeros(3, 4, 5)
    a[0, 0, 0], a[1, 1, 1], a[2, 2, 2] = math.nan, math.inf, 1e300
    b = torch.zeros(3, 5, 2)
    b[2, 2] = 1e300
    got = fused.bmm(a, b, out=torch.empty(3, 4, 2))
    assert torch.equal(got.isnan(), torch.bmm(a, b).isnan()) and bool(got.isnan().any())
    assert bool(torch.isinf(got[2, 2]).all())


def init_params(specs):
    return RunBatch.from_specs(specs).params


def trajectories(specs, grid, fused_step):
    out = {}

    def keep(done):
        for j, i in enumerate(done.index):
            out[int(i)] = {k: s[j].numpy() for k, s in done.snapshots.items()}

    simulate(RunBatch.from_specs(specs), grid, keep, fused=fused_step)
    return out


@pytest.mark.parametrize("kind", ["W", "W+v"])
def test_fused_runs_stay_within_the_stated_tolerance_of_unfused_ones(kind):
    """Whole runs of every rule (torch's Adam too, whose gradients are fused) at every recorded
    step, relative to the run's largest entry. (Not K, Q: with momentum, two roundings of one
    such run drift apart by 3e-2 in 200 steps, fused or not, as CPU and GPU runs do.)"""
    algorithms = usable(MIRROR + STEEPEST + [Algorithm("Adam", "adam", 0.01)], kind)
    specs = specs_of(algorithms, kind, 200)
    grid = union_grid([(s.steps, s.grid_points) for s in specs])
    by_family = {}
    for i, s in enumerate(specs):
        by_family.setdefault(s.algorithm.family, []).append(i)
    for index in by_family.values():
        group = [specs[i] for i in index]
        fused_runs = trajectories(group, grid, True)
        unfused_runs = trajectories(group, grid, False)
        for r, spec in enumerate(group):
            for name, ref in unfused_runs[r].items():
                scale = np.abs(ref).reshape(len(ref), -1).max(1).clip(min=1e-300)
                gap = np.abs(fused_runs[r][name] - ref).reshape(len(ref), -1).max(1) / scale
                assert gap.max() <= fused.FUSED_RUN_RTOL, (spec.algorithm.name, name, gap.max())


DEFERRING = [a for a in MIRROR if a.p > 2.0] + [MIRROR[0], MIRROR[6]]  # with p ≤ 2 beside


@pytest.mark.parametrize("fused_step", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("needs_redo", [False, True], ids=["in-range", "needs-redo"])
def test_deferred_range_checks_give_the_checked_steps_bit_for_bit(fused_step, needs_redo):
    """The engine checks the dual iterates' range (p > 2) on the device and reads the flag
    once per stretch of steps; where a step needed the log-domain redo the stretch is taken
    again with the check at every step. Either way: the checked steps, bit for bit. The redo
    is forced by entries of W at 1e-200, whose θ = |w|² underflows to 0, in a column whose
    gradient is exactly 0 (that coordinate of every z_i is 0): the redo keeps w, the unchecked
    map would set it to 0."""
    steps = 25
    specs = specs_of(DEFERRING, "W", steps)
    if needs_redo:
        for s in specs[:2]:
            s.init["W"][:, 0] = 1e-200
            s.problem.z[:, 0] = 0.0
    deferred, checked = RunBatch.from_specs(specs), RunBatch.from_specs(specs)
    assert deferred.defers_range_check
    count = []
    with torch.inference_mode():
        in_range = advance_torch(deferred, steps, fused_step, lambda: count.append(1), True)
        for _ in range(steps):
            checked.step(fused_step)
    assert in_range is not needs_redo and len(count) == steps
    for x, y in zip(deferred.state(), checked.state()):
        assert torch.equal(x, y)
    if needs_redo:  # the redo kept the tiny entries (the unchecked map would zero them)
        assert (deferred.params[0][:2, :, 0] == 1e-200).all()


def test_mirror_descent_defers_its_range_check_where_it_has_one():
    """p > 2, or p per run (its check sees which runs need it); not p ≤ 2 for all runs."""
    assert not RunBatch.from_specs(specs_of(MIRROR[:6], "W", 5)).defers_range_check
    assert not RunBatch.from_specs(specs_of(MIRROR[6:7] * 2, "W", 5)).defers_range_check
    assert not RunBatch.from_specs(specs_of(STEEPEST, "W", 5)).defers_range_check
    assert RunBatch.from_specs(specs_of(MIRROR[7:9], "KQ", 5)).defers_range_check
    assert RunBatch.from_specs(specs_of(MIRROR[:7], "W", 5)).defers_range_check  # 1.75 and 2


def test_the_fused_step_is_the_default_and_the_unfused_one_is_kept():
    spec = specs_of([Algorithm("MD-3", "md", 0.1, p=3.0, normalize="per_tensor")], "W", 30)
    grid = union_grid([(30, 10)])
    default, unfused = [], []
    simulate(RunBatch.from_specs(spec), grid, default.append)
    simulate(RunBatch.from_specs(spec), grid, unfused.append, fused=False)
    fused_run = trajectories(spec, grid, True)[0]["W"]
    assert np.array_equal(default[0].snapshots["W"][0].numpy(), fused_run)
    assert not np.array_equal(unfused[0].snapshots["W"][0].numpy(), fused_run)  # other rounding


def md_sweep(seeds=12, steps=(40, 60, 90)):
    """md-local in small: three p, runs of three lengths, one structure, shared data."""
    out = []
    for p, length in zip((1.75, 2.0, 3.0), steps):
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            out.append(
                RunSpec(
                    {"data": {"seed": seed}, "p": p},
                    gaussian_unit(4, 5, 6, seed=seed),
                    Algorithm(f"MD-{p:g}", "md", 0.1, p=p, normalize="per_tensor"),
                    length,
                    {"W": rng.standard_normal((6, 6))},
                    norms=(1.75, 2.0),
                    grid_points=12,
                )
            )
    return out


def same_tables(a: ResultsStore, b: ResultsStore) -> None:
    assert a.table().equals(b.table())


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [1, 5, 17])
def test_a_chunked_sweep_gives_the_in_memory_table(tmp_path, chunk_size):
    """In-process chunks (the path a Dask worker runs per chunk) end bit for bit as the whole
    batch: identical tables."""
    specs = md_sweep()
    whole = run_sweep(specs, ResultsStore(tmp_path / "whole"), progress=False)
    chunked = run_sweep(
        specs, ResultsStore(tmp_path / "chunked"), progress=False, chunk_size=chunk_size
    )
    assert whole.ran == chunked.ran == len(specs)
    same_tables(ResultsStore(tmp_path / "whole"), ResultsStore(tmp_path / "chunked"))


def test_a_sweep_holds_numpys_blas_to_its_one_thread(tmp_path, monkeypatch):
    """`fused.bmm` takes small products to numpy, whose BLAS may thread even those: inside a
    sweep it runs on the sweep's one thread, also where the caller allowed it more."""
    seen = []
    simulate_as_is = sweep.simulate

    def spy(*args, **kwargs):
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
        return simulate_as_is(*args, **kwargs)

    monkeypatch.setattr(sweep, "simulate", spy)
    with threadpool_limits(2, user_api="blas"):
        run_sweep(specs_of(MIRROR[:2], "W", 5), ResultsStore(tmp_path), progress=False)
        # (so some BLAS, numpy's, would run two threads; a single-threaded one stays at 1)
        assert 2 in {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    assert seen and all(threads == {1} for threads in seen), seen


def test_a_batch_larger_than_the_memory_budget_is_trained_in_chunks(tmp_path, monkeypatch):
    specs = md_sweep(seeds=6)
    run_sweep(specs, ResultsStore(tmp_path / "whole"), progress=False)
    points = len(sweep.batch_grid(specs))
    budget = 5 * memory.engine_bytes(specs[0], points)
    assert memory.chunk_size([(specs, points)], budget) == 5
    monkeypatch.setattr(memory, "ENGINE_BUDGET", budget)
    chunks, train = [], sweep.train_chunk_and_store

    def recording(chunk, *args, **kwargs):
        chunks.append(chunk)
        return train(chunk, *args, **kwargs)

    monkeypatch.setattr(sweep, "train_chunk_and_store", recording)
    run_sweep(specs, ResultsStore(tmp_path / "chunked"), progress=False)
    assert len(chunks) > 1 and all(len(c.stored) <= 5 for c in chunks)
    same_tables(ResultsStore(tmp_path / "whole"), ResultsStore(tmp_path / "chunked"))


def test_a_sweep_whose_results_do_not_fit_is_refused_before_training(tmp_path, monkeypatch):
    specs = md_sweep(seeds=10)
    results, engine = memory.estimate(specs, len(specs), len(specs))
    monkeypatch.setattr(memory, "available_memory", lambda: engine + results // 2)
    store = ResultsStore(tmp_path)
    with pytest.raises(memory.SweepTooLarge) as err:
        run_sweep(specs, store, progress=False, desc="md-small")
    message = str(err.value)
    assert message.startswith("md-small: 30 runs would hold about")
    assert "GiB available" in message and "--seeds" in message
    fit = int(message.split("(--seeds ")[1].split()[0])
    assert fit in (4, 5)  # about half the results fit: 15 runs, 3 per seed
    assert store.table().num_rows == 0  # nothing was trained


def test_available_memory_is_positive_and_below_the_machine():
    import os

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < memory.available_memory() <= total


# --- CUDA -------------------------------------------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")


@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("kind", ["W", "W+v"])
def test_the_engine_on_cuda_agrees_with_the_cpu(kind):
    specs = specs_of(usable(MIRROR + STEEPEST, kind), kind, 100)
    grid = union_grid([(s.steps, s.grid_points) for s in specs])
    for family in ("mirror", "steepest"):
        group = [s for s in specs if s.algorithm.family == family]
        on = {}
        for device in ("cpu", "cuda"):
            out = {}

            def keep(done, out=out):
                for j, i in enumerate(done.index):
                    out[int(i)] = done.snapshots["W"][j].numpy()

            simulate(RunBatch.from_specs(group, device=device), grid, keep)
            on[device] = out
        for r in on["cpu"]:
            ref = on["cpu"][r]
            scale = np.abs(ref).reshape(len(ref), -1).max(1).clip(min=1e-300)
            gap = np.abs(on["cuda"][r] - ref).reshape(len(ref), -1).max(1) / scale
            assert gap.max() <= fused.FUSED_RUN_RTOL, (group[r].algorithm.name, gap.max())


@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("algorithm", MIRROR, ids=lambda a: a.name)
def test_no_host_synchronisation_between_recording_points_on_cuda(algorithm):
    """Steps between recording points never wait for the GPU (torch's sync debug mode raises
    on every synchronising call), eager or replayed: p > 2 defers its range check."""
    specs = specs_of([algorithm] * 3, "W", 10)
    batch = RunBatch.from_specs(specs, device="cuda")
    deferred = batch.defers_range_check
    assert deferred == (algorithm.optimizer == "md" and algorithm.p > 2.0)
    replay = batch.stepping(True, deferred)  # the workspace and the graph are made here
    eager = partial(batch.step, True, batch.range_flag)
    assert not isinstance(replay, partial)  # a graph was captured
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(5):
            eager()
            replay()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.isfinite(batch.params[0]).all()


@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("family", [MIRROR, MIRROR[:7], MIRROR[7:8]], ids=["all", "p≤2", "p=3"])
def test_replayed_cuda_graphs_are_the_eager_steps_bit_for_bit(kind, family):
    specs = specs_of(family, kind, 30)
    replayed, eager = (RunBatch.from_specs(specs, device="cuda") for _ in range(2))
    deferred = replayed.defers_range_check
    step = replayed.stepping(True, deferred)
    assert not isinstance(step, partial)  # a graph was captured
    assert isinstance(replayed.stepping(False, deferred), partial)  # the reference: eager
    flag = torch.ones((), dtype=torch.bool, device="cuda") if deferred else None
    with torch.inference_mode():
        for _ in range(30):
            step()
            eager.step(True, flag)
    for x, y in zip(replayed.state(), eager.state()):
        assert torch.equal(x, y)


@pytest.mark.cuda
@cuda
def test_a_step_that_synchronises_is_taken_eagerly_and_one_that_fails_capture_says_so(caplog):
    batch = RunBatch.from_specs(specs_of(MIRROR[7:9], "W", 5), device="cuda")
    assert isinstance(batch.stepping(True, deferred=False), partial)  # checks on the host
    assert not caplog.records  # not even tried
    broken = graphs.capture(lambda: batch.params[0].sum().item(), batch.state())
    assert broken is None and "stepping eagerly" in caplog.text


@pytest.mark.cuda
@cuda
def test_a_sweep_runs_on_cuda_and_stores_what_the_cpu_stores(tmp_path):
    specs = md_sweep(seeds=4)
    on = {}
    for device in ("cpu", "cuda"):
        report = run_sweep(specs, ResultsStore(tmp_path / device), device=device, progress=False)
        on[device] = {r.key: r for r in report.records}
    for key, record in on["cpu"].items():
        other = on["cuda"][key]
        a = record.metrics.column("value").to_numpy()
        b = other.metrics.column("value").to_numpy()
        assert np.allclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True)
