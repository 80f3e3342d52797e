"""What storing a run costs, against the file system's own floor for the same files.

    python benchmarks/bench_store_writes.py [--runs 300] [--rounds 5] [--dir DIR]

`ResultsStore.save_record` of `--runs` runs the size of md-local's (nine metrics at 60 steps,
five 10 × 10 arrays) into a fresh store, beside the bare system calls any atomic per-run
layout makes for the same files (a fresh directory, five files created and written, the
directory renamed into place), each round in a fresh directory under DIR (default: the
system's temporary directory), alternating. Prints the CPU milliseconds a run of each, the
least and the most over the rounds, and their ratio: how much of storing is the file system's
(its cost of creating inodes can change tenfold from one round to the next on one disk, which
this shows beside the store's).
"""

import argparse
import os
import tempfile
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--runs", type=int, default=300)
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--dir", default=None, help="where the rounds' directories are made")
args = parser.parse_args()

import numpy as np  # noqa: E402

from attnbias.store import FINISHED, ResultsStore, tidy  # noqa: E402

rng = np.random.default_rng(0)
STEPS = np.unique(np.geomspace(1, 20_000, 60).astype(int))
METRICS = tidy(STEPS, {f"metric/{k}": rng.random(len(STEPS)) for k in range(9)})
ARRAYS = {f"W_{k}": rng.standard_normal((10, 10)) for k in range(5)}
FILES = {
    "metrics.parquet": 9_000,
    "arrays.npz": 4_500,
    "info.json": 1_400,
    "config.json": 450,
    "manifest.json": 560,
}  # md-local's sizes, in bytes


def bare(directory: str) -> float:
    """CPU seconds of the system calls alone: per run, a fresh directory, FILES created and
    written in it, the directory renamed into place."""
    root = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    start = time.process_time()
    try:
        for run in range(args.runs):
            os.mkdir(f".tmp{run}", dir_fd=root)
            fd = os.open(f".tmp{run}", os.O_RDONLY | os.O_DIRECTORY, dir_fd=root)
            for name, size in FILES.items():
                f = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd)
                os.write(f, b"x" * size)
                os.close(f)
            os.close(fd)
            os.rename(f".tmp{run}", f"run{run}", src_dir_fd=root, dst_dir_fd=root)
    finally:
        os.close(root)
    return time.process_time() - start


def store(directory: str) -> float:
    """CPU seconds of `save_record` for the same number of runs of that size."""
    results = ResultsStore(directory)
    start = time.process_time()
    for run in range(args.runs):
        results.save_record({"seed": run}, METRICS, ARRAYS, {"status": FINISHED})
    return time.process_time() - start


store(tempfile.mkdtemp(dir=args.dir))  # first use: imports and the provenance's probes
seen: dict[str, list[float]] = {"bare system calls": [], "ResultsStore.save_record": []}
for _ in range(args.rounds):
    for label, write in zip(seen, (bare, store)):
        with tempfile.TemporaryDirectory(dir=args.dir) as directory:
            seen[label].append(write(directory) / args.runs * 1e3)
print(f"{args.runs} runs a round, {args.rounds} rounds, CPU ms a run (least – most):")
for label, values in seen.items():
    print(f"  {label:>26}: {min(values):6.2f} – {max(values):6.2f}")
ratios = [s / b for s, b in zip(seen["ResultsStore.save_record"], seen["bare system calls"])]
print(f"  the store / the bare calls, round by round: {', '.join(f'{r:.1f}×' for r in ratios)}")
