"""Why attnbias's local Dask workers unset MALLOC_TRIM_THRESHOLD_ (engine/cluster.py).

    python benchmarks/bench_worker_malloc.py [--repeats 5]

Dask's nanny starts every worker process with MALLOC_TRIM_THRESHOLD_=65536. Setting it turns
off glibc's dynamic mmap threshold, so each large tensor a step frees goes back to the kernel
and the next step maps and page-faults it in again. This times the same work in two child
processes, one with Dask's setting and one without (torch and BLAS pinned to one thread in
both), and prints the ratio. Work: one text-md training step (the default model, batch 64,
fwd + bwd + plain ℓ1.1-MD) and one md-local sweep at quick scale.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DASK_SETTING = {"MALLOC_TRIM_THRESHOLD_": "65536"}


def best_of(repeats: int, fn, inner: int = 1) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - start) / inner)
    return best


def child(repeats: int) -> dict:
    import torch
    import torch.nn.functional as F

    from attnbias.experiment_registry import load_config
    from attnbias.experiments.base import run_experiment
    from attnbias.optim import MirrorDescent
    from attnbias.real.transformer import TextTransformer

    torch.set_num_threads(1)
    torch.manual_seed(0)
    vocab, batch, length = 8000, 64, 48  # text-md's compacted vocabulary is of this order
    model = TextTransformer(vocab, 2, dim=64, heads=4, layers=2, max_len=length, mlp_ratio=4,
                            post_norm=True, bias=False, dropout=0.2, init="pytorch")  # fmt: skip
    opt = MirrorDescent(model.parameters(), lr=0.16, p=1.1)
    ids = torch.randint(0, vocab, (batch, length))
    mask = torch.ones(batch, length, dtype=torch.long)
    labels = torch.randint(0, 2, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(input_ids=ids, attention_mask=mask).logits, labels).backward()
        opt.step()

    step()
    config = load_config("md-local", quick=True)

    def sweep():
        with tempfile.TemporaryDirectory() as out:
            run_experiment(config, out)

    sweep()
    return {
        "text-md step": best_of(repeats, step, inner=10),
        "md-local quick": best_of(repeats, sweep),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.repeats)))
        return
    pinned = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    env = {k: v for k, v in os.environ.items() if k not in DASK_SETTING}
    command = [sys.executable, __file__, "--child", "--repeats", str(args.repeats)]

    def timed(extra: dict) -> dict:
        done = subprocess.run(command, env={**env, **pinned, **extra}, capture_output=True,
                              text=True, check=True)  # fmt: skip
        return json.loads(done.stdout.strip().splitlines()[-1])

    ours, dasks = timed({}), timed(DASK_SETTING)
    print("one thread per process; best of", args.repeats)
    print("| work | MALLOC_TRIM_THRESHOLD_ unset (s) | 65536, Dask's default (s) | ratio |")
    print("|---|---|---|---|")
    for work in ours:
        print(
            f"| {work} | {ours[work]:.4f} | {dasks[work]:.4f} | {dasks[work] / ours[work]:.2f}× |"
        )


if __name__ == "__main__":
    main()
