"""Wall time of a synthetic sweep in-process and on local Dask clusters (docs/CLUSTER.md).

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/bench_cluster.py [--seeds 100 2000]
        [--workers 1 2] [--steps 1500 2000 20000]

Each row: md-local with that many seeds (3 × (seeds + 1) runs), trained from an empty results
directory; cluster rows include starting the cluster's processes. Efficiency is
in-process time / (workers × cluster time).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import torch

from attnbias.engine.cluster import Cluster
from attnbias.experiment_registry import load_config
from attnbias.experiments.base import run_experiment


def timed(config: dict, workers: int | None, chunk_size: int | None) -> float:
    out = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        start = time.perf_counter()
        if workers is None:
            run_experiment(config, out)
        else:
            with Cluster.start(workers=workers, chunk_size=chunk_size) as cluster:
                run_experiment(config, out, cluster=cluster)
        return time.perf_counter() - start
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[100, 2000])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--steps", type=int, nargs=3, help="steps for p = 1.75, 2, 3")
    p.add_argument("--chunk-size", type=int, help="default: automatic")
    args = p.parse_args()
    torch.set_num_threads(1)
    print("| seeds | runs | where | wall time (s) | speed-up | efficiency |")
    print("|---|---|---|---|---|---|")
    for seeds in args.seeds:
        overrides = {"seeds": seeds, "steps": args.steps}
        config = load_config("md-local", overrides=overrides)
        runs = 3 * (seeds + 1)
        base = timed(config, None, None)
        print(f"| {seeds} | {runs} | in-process | {base:.1f} | 1.00 | 1.00 |", flush=True)
        for workers in args.workers:
            t = timed(config, workers, args.chunk_size)
            print(
                f"| {seeds} | {runs} | {workers} worker(s) | {t:.1f} | {base / t:.2f} "
                f"| {base / (workers * t):.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
