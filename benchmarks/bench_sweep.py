"""The full md-local sweep with the batched engine, against a naive reference in the style of the
MD paper's code, measured in the same process.

    python benchmarks/bench_sweep.py [--naive-seeds 1] [--threads 1]

engine: `attnbias reproduce md-local` at full scale: 100 seeds × p ∈ {1.75, 2, 3} with 1,500 /
    2,000 / 20,000 normalized-MD steps (+ one zero-initialised run per p), the ℓp Att-SVMs of
    every run's selected tokens in every norm (shared where runs select the same tokens), the
    3×3 divergence curves, figure and summary. Goal: ≤ 30 s; peak memory < 2 GiB.
naive: as the MD paper's code, one process per (seed, p): it imports, makes the data, trains one
    AttentionClassifier by MirrorDescent with autograd in a Python loop, solves one cvxpy ℓp
    SVM per norm with the constraints written one by one, and computes the divergence curves;
    run for --naive-seeds seeds and every p, and extrapolated to the sweep's 100 seeds.
Prints both times and their ratio (goal ≥ 100×), and the ratio against the same reference run as
a loop inside one process (no per-run start-up).
"""

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--naive-seeds", type=int, default=1, help="seeds per p for the reference")
parser.add_argument("--threads", type=int, default=1, help="BLAS/torch threads (default 1)")
parser.add_argument("--naive-run", nargs=2, metavar=("SEED", "P"), help=argparse.SUPPRESS)
args = parser.parse_args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)  # before numpy loads BLAS
os.environ["TQDM_DISABLE"] = "1"

import subprocess  # noqa: E402
import sys  # noqa: E402

import cvxpy as cp  # noqa: E402
import torch  # noqa: E402

from attnbias.engine.single_run import run_reference  # noqa: E402
from attnbias.experiments import load_config, run_experiment  # noqa: E402
from attnbias.experiments.md_local import specs  # noqa: E402
from attnbias.metrics import directional_bregman  # noqa: E402
from attnbias.svm import selected_tokens  # noqa: E402

torch.set_num_threads(args.threads)


def naive_svm(X, z, alpha, p):
    """ℓp Att-SVM with cvxpy, one constraint per (sample, token) as in the papers' code."""
    n, T, d = X.shape
    W = cp.Variable((d, d))
    constraints = [
        (X[i, alpha[i]] - X[i, t]) @ W @ z[i] >= 1
        for i in range(n)
        for t in range(T)
        if t != alpha[i]
    ]
    cp.Problem(cp.Minimize(cp.pnorm(cp.vec(W, order="C"), p)), constraints).solve(cp.CLARABEL)
    return W.value


def naive_run(spec, ps):
    """Train one run, solve its SVMs in every norm, compute its divergence curves."""
    trajectory = run_reference(spec)
    W = trajectory["W"]
    alpha = selected_tokens(W[-1], spec.problem.X, spec.problem.z)
    for p in ps:
        W_mm = naive_svm(spec.problem.X, spec.problem.z, alpha, p)
        [float(directional_bregman(W_mm, W_t, p)) for W_t in W]


config = load_config("md-local")
if args.naive_run:  # one (seed, p) of the reference, in its own process
    seed, p = int(args.naive_run[0]), float(args.naive_run[1])
    (spec,) = [
        s
        for s in specs(config)
        if s.config["init"]["scale"] > 0 and s.config["data"]["seed"] == seed and s.algorithm.p == p
    ]
    naive_run(spec, config["ps"])
    sys.exit(0)

with tempfile.TemporaryDirectory() as out:
    start = time.perf_counter()
    summary = run_experiment(config, Path(out))
    engine = time.perf_counter() - start
peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print(f"engine: full md-local ({summary['runs']} runs, {summary['svms_solved']} distinct SVMs)")
print(
    f"  whole experiment {engine:6.1f} s (sweep: runs + SVMs + curves {summary['seconds']:.1f} s)"
)
print(f"  goal ≤ 30 s: {'met' if engine <= 30 else 'NOT met'}")
print(f"  peak memory {peak_gib:.2f} GiB (goal < 2 GiB: {'met' if peak_gib < 2 else 'NOT met'})")
print(
    f"  claims supported: {sum(c['supported'] for c in summary['claims'])}/{len(summary['claims'])}"
)

start = time.perf_counter()
runs = 0
for seed in range(1, args.naive_seeds + 1):
    for p in config["ps"]:
        command = [sys.executable, __file__, "--naive-run", str(seed), str(p)]
        subprocess.run([*command, "--threads", str(args.threads)], check=True)
        runs += 1
naive = time.perf_counter() - start
estimate = naive * config["seeds"] / args.naive_seeds
print(f"naive: {runs} runs (one process per seed and p) in {naive:.1f} s")
print(f"  → estimated full sweep ({config['seeds']} seeds): {estimate:.0f} s")
sweep = summary["seconds"]
print(f"speed-up, naive sweep / engine experiment: {estimate / engine:.0f}×  (goal ≥ 100×)")
print(f"speed-up, naive sweep / engine sweep:      {estimate / sweep:.0f}×")

# The same reference as a Python loop over seeds in this one process (no start-up costs).
chosen = [
    s
    for s in specs(config)
    if s.config["init"]["scale"] > 0 and s.config["data"]["seed"] <= args.naive_seeds
]
start = time.perf_counter()
for spec in chosen:
    naive_run(spec, config["ps"])
in_process = (time.perf_counter() - start) * config["seeds"] / args.naive_seeds
print(f"naive, one process looping over seeds: → estimated full sweep {in_process:.0f} s")
print(f"speed-up, in-process naive sweep / engine experiment: {in_process / engine:.0f}×")
