"""Time of optimizer.step() on a small model: an nn.TransformerEncoderLayer (width 64: about
50 k float32 parameters in 12 tensors), where a step is a few hundred microseconds and the
per-call overhead of the optimiser (Python, operator calls, host synchronisations, checks)
is what it costs, not the arithmetic. Issue 31, goal 4: NormalizedGD, PolyakStep and SignGD
no slower than AdamW (foreach), MirrorDescent (p ≠ 2) within 1.5× of it.

One thread (set through OMP/MKL/OpenBLAS before torch is imported, as
bench_optimizer_overhead.py does); one fixed gradient from one forward and backward pass;
each optimiser steps its own copy of the layer. The optimisers take turns round by round in a
fresh random order, each timing `--steps` consecutive steps a round; reported: the median over
the rounds of the time per step, and its ratio to AdamW's.

    python benchmarks/bench_small_step.py [--width 64] [--rounds 30] [--steps 50]
                                          [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import os

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=64, help="d_model (feed-forward: 4×)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--steps", type=int, default=50, help="steps timed together a round")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="write the results here")
    return parser.parse_args()


ARGS = parse_args()
for variable in THREAD_VARIABLES:  # before torch (and its BLAS) is loaded
    os.environ[variable] = str(ARGS.threads)

import copy  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from attnbias.optim import MirrorDescent, NormalizedGD, PolyakStep, SignGD  # noqa: E402

# step time relative to AdamW's (foreach), issue 31 goal 4
GOALS = {
    "NormalizedGD": 1.0,
    "PolyakStep": 1.0,
    "SignGD": 1.0,
    "ℓ1.1-MD": 1.5,
    "ℓ1.1-MD (normalized)": 1.5,
}

OPTIMIZERS = {
    "SGD": lambda ps: torch.optim.SGD(ps, lr=1e-3, foreach=True),
    "AdamW": lambda ps: torch.optim.AdamW(ps, lr=1e-3, foreach=True),
    "NormalizedGD": lambda ps: NormalizedGD(ps, lr=1e-3),
    "PolyakStep": lambda ps: PolyakStep(ps, lr=1e-3),
    "SignGD": lambda ps: SignGD(ps, lr=1e-3),
    "ℓ1.1-MD": lambda ps: MirrorDescent(ps, lr=1e-3, p=1.1),
    "ℓ1.1-MD (normalized)": lambda ps: MirrorDescent(ps, lr=1e-3, p=1.1, normalize=True),
}


def layer(width: int) -> torch.nn.Module:
    return torch.nn.TransformerEncoderLayer(
        width, nhead=4, dim_feedforward=4 * width, dropout=0.0, batch_first=True
    )


def returning(value):
    """A closure that returns `value` (PolyakStep's step needs the loss)."""
    return lambda: value


def main(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    base = layer(args.width)
    x = torch.randn(8, 16, args.width)
    n = sum(w.numel() for w in base.parameters())
    runs = []
    for name, make in OPTIMIZERS.items():
        model = copy.deepcopy(base)  # (a deep copy has no .grad)
        loss = model(x).square().mean()
        loss.backward()
        optimizer = make(list(model.parameters()))
        runs.append((name, optimizer, returning(loss.detach())))
    for _, optimizer, closure in runs:  # warm-up: state, caches
        for _ in range(3):
            optimizer.step(closure)
    times: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    order = list(runs)
    for _ in range(args.rounds):
        random.shuffle(order)
        for name, optimizer, closure in order:
            start = time.process_time()
            for _ in range(args.steps):
                optimizer.step(closure)
            times[name].append((time.process_time() - start) / args.steps)
    median = {name: statistics.median(t) for name, t in times.items()}
    adamw = median["AdamW"]
    print(
        f"nn.TransformerEncoderLayer(width {args.width}): {n:,} float32 parameters in "
        f"{len(list(base.parameters()))} tensors; {args.threads} thread(s); median CPU time over "
        f"{args.rounds} rounds of {args.steps} steps, optimisers interleaved"
    )
    print(f"{'optimiser':<22}{'step µs':>9}{'/AdamW':>9}  goal")
    results = []
    for name, seconds in median.items():
        row = {"optimizer": name, "step_us": 1e6 * seconds, "vs_adamw": seconds / adamw}
        verdict = ""
        goal = GOALS.get(name)
        if goal is not None:
            row["goal_vs_adamw"], row["goal_met"] = goal, row["vs_adamw"] <= goal
            verdict = f"≤ {goal:.2f}× {'met' if row['goal_met'] else 'NOT met'}"
        results.append(row)
        print(f"{name:<22}{row['step_us']:>9.1f}{row['vs_adamw']:>8.2f}×  {verdict}")
    met = sum(row.get("goal_met", False) for row in results)
    print(f"goals met: {met} of {len(GOALS)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "parameters": n, "results": results}, f, indent=1)


if __name__ == "__main__":
    main(ARGS)
