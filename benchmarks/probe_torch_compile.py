"""torch.compile of a branch-free engine step, for the choice of a compiled backend (issue 31).

    python benchmarks/probe_torch_compile.py [--steps 200]

md-local's 101 runs of p = 3 (float64, one thread): the fused step's arithmetic written without
host branches (uniform p, per-tensor normalisation, no range check), compiled once by
`torch.compile(fullgraph=True)` (Inductor, which writes C++ and needs a C++ compiler: without
one, `CXX=/nonexistent python benchmarks/probe_torch_compile.py` shows what a user sees), against
the same step eager and the numba backend (`engine.compiled`). CPU seconds: compile time (the
first call) and per step after it.
"""

import argparse
import math
import os
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=200)
args = parser.parse_args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import torch  # noqa: E402

from attnbias.engine import RunBatch, compiled  # noqa: E402
from attnbias.experiments import load_config  # noqa: E402
from attnbias.experiments.md_local import specs  # noqa: E402

torch.set_num_threads(1)
P, LR = 3.0, 0.1
Q = P / (P - 1.0)


def step(W, theta, X, z, yh):
    """One normalized ℓ3 mirror step of every run, branch-free (the fused step's maths)."""
    n = X.shape[1]
    a = torch.einsum("rntd,rnd->rnt", X, torch.einsum("rab,rnb->rna", W, z))
    largest, top = a.max(-1, keepdim=True)
    shifted = a - largest
    e = shifted.exp()
    total = e.sum(-1, keepdim=True)
    u = (e / total * yh).sum(-1)
    offset = -torch.nn.functional.softplus(u) - math.log(n) - total.squeeze(-1).log()
    terms = (shifted + offset.unsqueeze(-1)).scatter(-1, top, -math.inf)
    m = terms.amax((1, 2), keepdim=True).nan_to_num(0.0, 0.0, 0.0)
    r = (terms - m).exp() * (u.unsqueeze(-1) - yh)
    r = r.scatter(-1, top, -r.sum(-1, keepdim=True))
    G = torch.einsum("rnt,rntd,rnb->rdb", r, X, z)
    size = G.abs()
    biggest = size.amax((1, 2), keepdim=True)
    norm = ((size / biggest) ** Q).sum((1, 2), keepdim=True) ** (1 / Q) * biggest
    theta = theta - LR * G / norm
    return theta.abs().sqrt().copysign(theta), theta


runs = [s for s in specs(load_config("md-local")) if s.algorithm.p == P]
batch = RunBatch.from_specs(runs)
X, z = batch.data.X, batch.data.z
yh = batch.data.y.unsqueeze(-1) * batch.data.h
W0, theta0 = batch.params[0].clone(), batch.duals[0].clone()


def timed(function, steps):
    W, theta = W0.clone(), theta0.clone()
    start = time.process_time()
    with torch.inference_mode():
        for _ in range(steps):
            W, theta = function(W, theta, X, z, yh)
    return time.process_time() - start


print(f"md-local's {len(runs)} runs of p = 3, float64, one thread, {args.steps} steps")
eager = timed(step, args.steps) / args.steps
print(f"  eager branch-free step:  {eager * 1e6:7.0f} µs/step")
try:
    fast = torch.compile(step, fullgraph=True, dynamic=False)
    first = timed(fast, 1)
    per = timed(fast, args.steps) / args.steps
    print(f"  torch.compile: compile (first call) {first:.1f} s CPU, then {per * 1e6:7.0f} µs/step")
except Exception as err:  # what a user without a C++ compiler meets
    print(f"  torch.compile failed: {type(err).__name__}: {str(err).splitlines()[0][:200]}")
if compiled.kernels() is not None:
    start = time.process_time()
    compiled.advance(batch, 1)
    first = time.process_time() - start
    start = time.process_time()
    compiled.advance(batch, args.steps)
    per = (time.process_time() - start) / args.steps
    print(f"  numba (engine.compiled): first call {first:.1f} s CPU, then {per * 1e6:7.0f} µs/step")
