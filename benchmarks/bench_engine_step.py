"""One engine step of md-local's batch, fused against unfused, on a device.

    python benchmarks/bench_engine_step.py [--device cpu|cuda] [--threads 1] [--steps 200]
                                           [--deferred] [--torch-products] [--profile]

The batch is full md-local's (100 seeds × p ∈ {1.75, 2, 3}, the zero-initialised runs and the
40 longer ℓ1.75 and ℓ2 runs of the first 20 seeds: 343 runs of 10×10 W) and its last phase (the
101 runs of p = 3 that take 18,000 of the 20,000 steps). Each is stepped `--steps` times per
round, fused and unfused interleaved, best of `--rounds` rounds, as the engine's loop takes
them between recording points (on CUDA with
range checks deferred and each step a replay of its graph, captured in the first round); on
CUDA each round ends with a synchronisation (the loop itself has none).
--profile: also print torch.profiler's table of the operations of --steps fused steps of the
101 runs (how many a step takes, and what each costs).
--torch-products: the fused step with its stacks of products by torch.bmm (as before
`engine.fused.bmm` took small ones to numpy on the CPU), against the fused step as it is.
On the CPU the times are this process's CPU time (one thread: the work done, which a busy
machine changes much less than the wall time); on CUDA, wall time. On the CPU with numba
installed it also times the compiled step (`engine.compiled`, what the engine takes there) on
the same batches, per run-step, and again with every run alone (the per-run kernel, which
steps the runs lanes do not take): run it with PYTHONPATH at another tree's src to compare
kernels.
"""

import argparse
import os
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
parser.add_argument("--threads", type=int, default=1, help="torch threads on the CPU (default 1)")
parser.add_argument("--steps", type=int, default=200, help="steps per round")
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument(
    "--deferred",
    action="store_true",
    help="defer the range check on the CPU too (as on CUDA), to compare with checking each step",
)
parser.add_argument(
    "--torch-products",
    action="store_true",
    help="compare the fused step with its products by torch.bmm instead of the unfused one",
)
parser.add_argument("--profile", action="store_true", help="print the fused step's operations")
args = parser.parse_args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)

import torch  # noqa: E402

from attnbias.engine import RunBatch, compiled  # noqa: E402
from attnbias.engine import fused as engine_fused  # noqa: E402
from attnbias.engine.simulate import advance_torch  # noqa: E402
from attnbias.experiments import load_config  # noqa: E402
from attnbias.experiments.md_local import specs  # noqa: E402

torch.set_num_threads(args.threads)
if args.device == "cuda" and not torch.cuda.is_available():
    raise SystemExit("--device cuda: no CUDA GPU is visible")


def sync():
    if args.device == "cuda":
        torch.cuda.synchronize()


clock = time.perf_counter if args.device == "cuda" else time.process_time


deferred = args.device == "cuda" or args.deferred


def per_step(batch: RunBatch, fused: bool, torch_products: bool = False) -> float:
    """As the engine's loop steps between recording points (`simulate.advance_torch`): on CUDA the
    range check deferred and a graph replayed."""
    small = engine_fused.SMALL_PRODUCT
    engine_fused.SMALL_PRODUCT = 0 if torch_products else small  # every product by torch.bmm
    try:
        sync()
        start = clock()
        with torch.inference_mode():
            advance_torch(
                batch, args.steps, fused, lambda: None, batch.defers_range_check and deferred
            )
        sync()
    finally:
        engine_fused.SMALL_PRODUCT = small
    return (clock() - start) / args.steps


runs = specs(load_config("md-local"))
last_phase = [s for s in runs if s.algorithm.p == 3.0]
print(f"engine step on {args.device} ({args.threads} thread(s)), best of {args.rounds} rounds")
# (fused, products by torch.bmm) of the step compared with the fused step as it is
other = (True, True) if args.torch_products else (False, False)
name = "fused, torch.bmm" if args.torch_products else "unfused"
for label, chosen in (
    (f"all {len(runs)} runs (p = 1.75, 2, 3)", runs),
    (f"the {len(last_phase)} runs of p = 3", last_phase),
):
    variants = [(True, False), other]
    batches = {v: RunBatch.from_specs(chosen, device=args.device) for v in variants}
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(args.rounds):
        for v in variants:
            best[v] = min(best[v], per_step(batches[v], *v))
    fast, slow = best[variants[0]], best[other]
    print(
        f"  {label}: fused {fast * 1e6:7.0f} µs/step, {name} {slow * 1e6:7.0f} µs/step: "
        f"{slow / fast:.2f}×"
    )
    if args.device == "cpu" and compiled.kernels() is not None:
        for lanes in (True, False):
            batch = RunBatch.from_specs(chosen)
            compiled.advance(batch, 1, lanes)  # loads (or compiles) the kernel
            step = float("inf")
            for _ in range(args.rounds):
                start = clock()
                if not compiled.advance(batch, args.steps, lanes):  # (θ left its range)
                    raise SystemExit("the compiled step handed these steps back to torch")
                step = min(step, (clock() - start) / args.steps)
            how = "compiled" if lanes else "compiled, every run alone"
            print(
                f"    {how}: {step * 1e6:7.0f} µs/step, {step / len(chosen) * 1e6:5.2f} µs a "
                f"run-step; fused / compiled: {fast / step:.2f}×"
            )

if args.profile:
    from torch.profiler import profile

    batch = RunBatch.from_specs(last_phase, device=args.device)
    per_step(batch, True)  # warm
    with profile() as prof:
        per_step(batch, True)
    print(f"operations of {args.steps} fused steps of the 101 runs of p = 3:")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
