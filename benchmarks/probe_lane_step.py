"""md-local's p = 3 step with 8 runs in the lanes of one register: how much faster than the
per-run kernel, and at what compile cost? (issue 31, goal 2; the probe that led to the engine's
lanes, `engine.kernels_lanes`, which the engine now takes for such runs)

    python benchmarks/probe_lane_step.py [--steps 200] [--slp on|off] [--stub-exp]

The engine's per-run kernel (`engine.kernels_numba`) takes one run at a time. This probe
generates the same step for md-local's runs of p = 3 (normalised ℓ3 mirror descent, rule
per_tensor, logistic loss, a fixed head; n = 6, T = 8, d = 10) with 8 runs side by side: every
array has the run innermost and every statement is written out once per lane, each sum in a
named local, so that LLVM's SLP vectoriser can pack the 8 lanes (benchmarks/probe_simd.py:
numba runs it only where `numba.config.SLP_VECTORIZE` is set, which this probe sets for the
kernel it compiles, `--slp off` not). Every lane does the per-run step's operations in its
order, with libm's exp, log1p and log called per lane. It times both kernels over `--steps`
steps of the first 96 such runs from their initial state (CPU time, best of 5), prints the
lane kernel's compile time (numba cannot cache code made by exec: the engine would need the
generated module on disk) and the largest difference of the two kernels' W, relative to each
run's largest entry. --stub-exp replaces the 90 exps of the softmax and its gradient by a
division, to show what a vectorised exp could at most gain (its W then differ).
"""

import argparse
import math
import os
import textwrap
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

from attnbias.engine import RunBatch, compiled  # noqa: E402
from attnbias.experiments import load_config  # noqa: E402
from attnbias.experiments.md_local import specs  # noqa: E402

torch.set_num_threads(1)
LANES = 8
N, T, D = 6, 8, 10
EXP = "(1.0 / (1.0 - {x}))" if args.stub_exp else "math.exp({x})"
SMALLEST = float(np.finfo(np.float64).tiny * np.finfo(np.float64).eps)  # the engine's divisor floor


def lanes(statements: str, indent: int) -> str:
    """The statements (lines) once per lane, {l} the lane, indented by `indent`."""
    return "".join(
        textwrap.indent(statements.format(l=lane), " " * indent) + "\n" for lane in range(LANES)
    )


def lane_sum(target: str, term: str, over: str, indent: int) -> str:
    """target = Σ_over term, each lane's sum in its own local, in ascending order of `over`."""
    return (
        lanes("s{l} = 0.0", indent)
        + " " * indent
        + f"for {over}:\n"
        + lanes("s{l} += " + term, indent + 4)
        + lanes(f"{target} = s{{l}}", indent)
    )


def source() -> str:
    """The lane kernel: `steps` steps of every group of 8 runs, in place."""
    lines = [
        "import math\nimport numpy as np\nfrom numba import njit\n\n\n",
        "@njit(error_model='numpy')\n",
        "def step_lanes(W, theta, X, z, yh, lr, steps):\n",
        f"    Wz = np.empty(({N}, {D}, {LANES}))\n    lg = np.empty(({N}, {T}, {LANES}))\n",
        f"    ex = np.empty(({N}, {T}, {LANES}))\n    xr = np.empty(({N}, {D}, {LANES}))\n",
        f"    G = np.empty(({D}, {D}, {LANES}))\n    u = np.empty(({N}, {LANES}))\n",
        f"    off = np.empty(({N}, {LANES}))\n    top = np.empty(({N}, {LANES}), np.int64)\n",
        "    for g in range(W.shape[0]):\n        for _ in range(steps):\n",
        f"            for i in range({N}):\n                for a in range({D}):\n",
        lane_sum("Wz[i, a, {l}]", "W[g, a, b, {l}] * z[g, i, b, {l}]", f"b in range({D})", 20),
        f"                for t in range({T}):\n",
        lane_sum("lg[i, t, {l}]", "X[g, i, t, a, {l}] * Wz[i, a, {l}]", f"a in range({D})", 20),
        lanes("m{l} = -math.inf\nk{l} = 0", 16),
        f"                for t in range({T}):\n",
        lanes(
            "c = lg[i, t, {l}]\nk{l} = t if c > m{l} else k{l}\nm{l} = c if c > m{l} else m{l}",
            20,
        ),
        lanes("top[i, {l}] = k{l}\ntotal{l} = 0.0", 16),
        f"                for t in range({T}):\n",
        lanes(
            "c = lg[i, t, {l}] - m{l}\n"
            "lg[i, t, {l}] = c\n"
            f"e = 0.0 if c < -746.0 else {EXP.format(x='c')}\n"
            "ex[i, t, {l}] = e\n"
            "total{l} += e",
            20,
        ),
        lane_sum(
            "u[i, {l}]", "ex[i, t, {l}] / total{l} * yh[g, i, t, {l}]", f"t in range({T})", 16
        ),
        # log|ℓ'(u)| of the logistic loss is −softplus(u), then − log n − log Σ e
        lanes(
            "f = u[i, {l}]\nsp = f + math.log1p(math.exp(-f)) if f > 0.0 "
            "else math.log1p(math.exp(f))\n"
            f"off[i, {{l}}] = -sp - {math.log(N)!r} - math.log(total{{l}})",
            16,
        ),
        lanes("mm{l} = -math.inf", 12),
        f"            for i in range({N}):\n                for t in range({T}):\n",
        lanes(
            "c = lg[i, t, {l}] + off[i, {l}]\n"
            "lg[i, t, {l}] = c\n"
            "mm{l} = c if (t != top[i, {l}] and c > mm{l}) else mm{l}",
            20,
        ),
        lanes("mm{l} = mm{l} if math.isfinite(mm{l}) else 0.0", 12),
        f"            for i in range({N}):\n",
        lanes("rest{l} = 0.0", 16),
        f"                for t in range({T}):\n",
        lanes(
            f"x = {EXP.format(x='lg[i, t, {l}] - mm{l}')} * (u[i, {{l}}] - yh[g, i, t, {{l}}]) "
            "if t != top[i, {l}] else 0.0\n"
            "ex[i, t, {l}] = x\n"
            "rest{l} += x",
            20,
        ),
        lanes("ex[i, top[i, {l}], {l}] = -rest{l}", 16),
        f"                for a in range({D}):\n",
        lane_sum("xr[i, a, {l}]", "ex[i, t, {l}] * X[g, i, t, a, {l}]", f"t in range({T})", 20),
        lanes("big{l} = 0.0", 12),
        f"            for a in range({D}):\n                for b in range({D}):\n",
        lane_sum("G[a, b, {l}]", "xr[i, a, {l}] * z[g, i, b, {l}]", f"i in range({N})", 20),
        lanes("c = abs(G[a, b, {l}])\nbig{l} = c if c > big{l} else big{l}", 20),
        # ‖G‖_1.5 as m·‖G/m‖_1.5 (m = max|G|), then θ ← θ − η G/‖G‖, w = sign(θ)·√|θ|
        lanes(f"acc{{l}} = 0.0\ntop{{l}} = max(big{{l}}, {SMALLEST!r})", 12),
        f"            for a in range({D}):\n                for b in range({D}):\n",
        lanes("c = abs(G[a, b, {l}]) / top{l}\nacc{l} += c * math.sqrt(c)", 20),
        lanes(
            "norm{l} = acc{l} ** (1.0 / 1.5) * big{l}\n"
            "norm{l} = norm{l} if norm{l} != 0.0 else math.inf",
            12,
        ),
        f"            for a in range({D}):\n                for b in range({D}):\n",
        lanes(
            "th = theta[g, a, b, {l}] - G[a, b, {l}] / norm{l} * lr[g, {l}]\n"
            "theta[g, a, b, {l}] = th\n"
            "W[g, a, b, {l}] = math.copysign(math.sqrt(abs(th)), th)",
            20,
        ),
        "    return -1\n",
    ]
    return "".join(lines)


def in_lanes(a: np.ndarray) -> np.ndarray:
    """(R, ...) → (R / 8, ..., 8): 8 runs side by side, the run innermost."""
    grouped = a.reshape(a.shape[0] // LANES, LANES, *a.shape[1:])
    return np.ascontiguousarray(np.moveaxis(grouped, 1, -1))


def best_seconds(call, rounds: int = 5) -> float:
    best = math.inf
    for _ in range(rounds):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


runs = [s for s in specs(load_config("md-local")) if s.algorithm.p == 3.0][: 12 * LANES]
batch = RunBatch.from_specs(runs)
data, hyper = batch.data, batch.hyper
assert set(hyper.rule.tolist()) == {1} and data.loss.name == "logistic" and data.excess is None
W0, theta0 = batch.params[0].numpy().copy(), batch.duals[0].numpy().copy()
inputs = [
    in_lanes(a)
    for a in (
        data.X.numpy(),
        data.z.numpy(),
        (data.y.unsqueeze(-1) * data.h).numpy(),
        hyper.lr.numpy().astype(np.float64),
    )
]

slp = numba.config.SLP_VECTORIZE
numba.config.SLP_VECTORIZE = int(args.slp == "on")  # read as numba builds the kernel's passes
start = time.process_time()
namespace = {}
exec(compile(source(), "<lane kernel>", "exec"), namespace)
step_lanes = namespace["step_lanes"]
step_lanes(in_lanes(W0), in_lanes(theta0), *inputs, 1)
compile_seconds = time.process_time() - start
numba.config.SLP_VECTORIZE = slp

W, theta = in_lanes(W0), in_lanes(theta0)


def lane_steps():
    W[...], theta[...] = in_lanes(W0), in_lanes(theta0)
    step_lanes(W, theta, *inputs, args.steps)


def compiled_steps():
    batch.params[0].copy_(torch.from_numpy(W0))
    batch.duals[0].copy_(torch.from_numpy(theta0))
    if not compiled.advance(batch, args.steps):
        raise SystemExit("the per-run kernel handed these steps back to torch")


compiled.lane_groups = lambda *args: []  # the engine's per-run kernel alone, not its lanes
compiled.advance(batch, 1)  # loads (or compiles) the engine's kernel
lane, engine = best_seconds(lane_steps), best_seconds(compiled_steps)
run_steps = args.steps * len(runs)
W_lanes = np.moveaxis(W, -1, 1).reshape(W0.shape)
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
