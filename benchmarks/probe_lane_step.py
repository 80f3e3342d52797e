"""md-local's p = 3 step with 8 runs in the lanes of one register (`engine.kernels_lanes`)
against the per-run kernel: how much faster, at what compile cost, and what SLP and the exps
are worth (issue 31, goal 2)

    python benchmarks/probe_lane_step.py [--steps 200] [--slp on|off] [--stub-exp]

The engine's per-run kernel (`engine.kernels_numba`) takes one run at a time; its lanes
(`engine.lanes_codegen`'s generated kernel) take 8 runs of one p, rule and risk side by side, every
statement written out once per lane so that LLVM's SLP vectoriser can pack them (numba runs
it only where `numba.config.SLP_VECTORIZE` is set). This probe compiles the generator's kernel
afresh (uncached: its compile time is printed) with SLP as `--slp` says, and times it beside
the per-run kernel (the engine with its lanes turned off) on the first 96 of md-local's runs
of p = 3 (normalised ℓ3 mirror descent, rule per_tensor, the logistic loss, a fixed head), over
`--steps` steps from their initial state (CPU time, best of 5), and prints the largest
difference of the two kernels' W, relative to each run's largest entry. --stub-exp replaces
the 90 exps of the softmax and its gradient by a division, to show what a vectorised exp
could at most gain (its W then differ).
"""

import argparse
import contextlib
import math
import os
import re
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--slp", choices=("on", "off"), default="on")
parser.add_argument("--stub-exp", action="store_true")
args = parser.parse_args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numba  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from attnbias.engine import RunBatch, compiled, lanes_codegen  # noqa: E402
from attnbias.experiments import load_config  # noqa: E402
from attnbias.experiments.md_local import specs  # noqa: E402

torch.set_num_threads(1)

# the exps of the softmax and of its gradient (90 a run-step), as the generator writes them
SOFTMAX_EXP = (r"exp_lanes\(logits\[i, t, (\d)\]\)", r"(1.0 / (1.0 - logits[i, t, \1]))")
GRADIENT_EXP = (
    r"exp_lanes\(terms\[i, t, (\d)\] - m(\d)\)",
    r"(1.0 / (1.0 - (terms[i, t, \1] - m\2)))",
)


def lane_kernel_source() -> str:
    """The engine's lane kernel, importable outside its package, uncached, exps as asked."""
    text = lanes_codegen.source().replace("from .", "from attnbias.engine.")
    text = text.replace("@njit(cache=True,", "@njit(")
    if args.stub_exp:
        for pattern, stub in (SOFTMAX_EXP, GRADIENT_EXP):
            text, count = re.subn(pattern, stub, text)
            assert count == lanes_codegen.LANES, (pattern, count)
    return text


def best_seconds(call, rounds: int = 5) -> float:
    best = math.inf
    for _ in range(rounds):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


runs = [s for s in specs(load_config("md-local")) if s.algorithm.p == 3.0][:96]
batch = RunBatch.from_specs(runs)
data, hyper = batch.data, batch.hyper
assert set(hyper.rule.tolist()) == {1} and data.loss.name == "logistic" and data.excess is None
W0, theta0 = batch.params[0].numpy().copy(), batch.duals[0].numpy().copy()
inputs = compiled.kernel_inputs(batch, lanes=True)  # the engine's own arguments
every = inputs.runs
assert np.array_equal(every, np.arange(len(runs)))  # 12 groups of 8, in order
info = np.finfo(np.float64)
limits = (info.tiny * info.eps, info.tiny / info.eps, info.max, info.tiny)
loss = compiled.LOSS_CODES["logistic"]


def state_in_lanes():
    """W, θ and a momentum buffer (none: W's, untouched) in lanes."""
    W = compiled.in_lanes(W0, every)
    return W, compiled.in_lanes(theta0, every), W


# SLP as the engine sets it: numba's setting and its variable both (numba re-reads its settings
# from the environment where that changed, as `compiled.kernels` changes it)
os.environ.pop(compiled.SLP_VARIABLE, None)
numba.config.SLP_VECTORIZE = 0
slp = compiled.slp_vectorised() if args.slp == "on" else contextlib.nullcontext()
start = time.process_time()
namespace = {}
exec(compile(lane_kernel_source(), "<lane kernel>", "exec"), namespace)
advance_lanes = namespace["advance_lanes"]
with slp:  # read as numba builds the kernel's passes, at its first call
    advance_lanes(*state_in_lanes(), *inputs.lane_args, loss, 1, True, False, *limits)
compile_seconds = time.process_time() - start

W, theta, _ = state_in_lanes()


def lane_steps():
    W[...], theta[...], _ = state_in_lanes()
    if advance_lanes(W, theta, W, *inputs.lane_args, loss, args.steps, True, False, *limits) >= 0:
        raise SystemExit("the lane kernel handed these steps back to torch")


def compiled_steps():
    batch.params[0].copy_(torch.from_numpy(W0))
    batch.duals[0].copy_(torch.from_numpy(theta0))
    if not compiled.advance(batch, args.steps):
        raise SystemExit("the per-run kernel handed these steps back to torch")


compiled.lane_groups = lambda *args: []  # the engine's per-run kernel alone, not its lanes
compiled.advance(batch, 1)  # loads (or compiles) the engine's kernel
lane, engine = best_seconds(lane_steps), best_seconds(compiled_steps)
run_steps = args.steps * len(runs)
W_lanes = np.empty_like(W0)
compiled.out_of_lanes(W, every, W_lanes)
W_engine = batch.params[0].numpy()
scale = np.abs(W_engine).max(axis=(1, 2), keepdims=True)
print(
    f"{len(runs)} runs of p = 3, {args.steps} steps, SLP {args.slp}"
    f"{', exps stubbed' if args.stub_exp else ''}:"
)
print(
    f"  lanes {lane / run_steps * 1e6:.3f} µs a run-step, per-run kernel "
    f"{engine / run_steps * 1e6:.3f}: {engine / lane:.2f}× (lanes compiled in "
    f"{compile_seconds:.1f} CPU s)"
)
print(
    f"  largest difference of W, relative to each run's largest entry: "
    f"{np.max(np.abs(W_lanes - W_engine) / scale):.2e}"
)
