"""Where the time of `attnbias reproduce NAME --full` goes, by phase, in one process.

    python benchmarks/bench_phases.py [NAME ...] [--threads 1] [--set KEY=VALUE ...]

For each experiment (default: md-local), in a fresh process: the CPU seconds (one thread: the
work done) of importing the command line, of the engine's training steps (its loop, without
the measuring of finished runs), of measuring them (their Att-SVMs and metrics), of drawing
the figures, and of the rest (configs, specs, the store, claims, the summary); then, within
those, the Att-SVMs (measuring), storing the runs (training), reading runs back and the runs'
table (the rest). What a faster engine step can gain is the "training" share only. --set is
`reproduce --set` (e.g. md-local's `diagonal_seeds=1`: about the work of its older design).
With PYTHONPATH at another tree's src (e.g. a `git worktree` of 4eb1df4) it splits that tree's
command the same way.
"""

import argparse
import os
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("names", nargs="*", default=["md-local"], help="experiments (full scale)")
parser.add_argument("--threads", type=int, default=1, help="BLAS/torch threads (default 1)")
parser.add_argument(
    "--set", action="append", default=[], metavar="KEY=VALUE", help="a config change (repeatable)"
)
parser.add_argument("--one", help=argparse.SUPPRESS)  # the child: time this experiment
args = parser.parse_args()

if args.one is None:
    env = {**os.environ, "TQDM_DISABLE": "1"}
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(args.threads)
    for name in args.names:
        command = [sys.executable, __file__, "--one", name, "--threads", str(args.threads)]
        command += [f"--set={change}" for change in args.set]
        subprocess.run(command, env=env, check=True)
    raise SystemExit(0)

import time  # noqa: E402

start = time.process_time()
import importlib  # noqa: E402

from attnbias import cli  # noqa: E402
from attnbias.engine import sweep, targets  # noqa: E402
from attnbias.store import ResultsStore  # noqa: E402

try:
    from attnbias.experiment_registry import EXPERIMENTS
except ImportError:  # an older tree (PYTHONPATH at REV's src): 4eb1df4 kept them here
    from attnbias.experiments import EXPERIMENTS

imported = time.process_time() - start
spent = {"measure": 0.0, "simulate": 0.0, "figures": 0.0}
parts = {"Att-SVMs": 0.0, "storing runs": 0.0, "reading runs": 0.0, "the runs' table": 0.0}


def timed(function, phase, into=spent):
    def wrapper(*a, **k):
        begin = time.process_time()
        try:
            return function(*a, **k)
        finally:
            into[phase] += time.process_time() - begin

    return wrapper


sweep.measure = timed(sweep.measure, "measure")
sweep.simulate = timed(sweep.simulate, "simulate")
targets.References.att = timed(targets.References.att, "Att-SVMs", parts)
saving = "save_record" if hasattr(ResultsStore, "save_record") else "save"  # (4eb1df4: save)
setattr(ResultsStore, saving, timed(getattr(ResultsStore, saving), "storing runs", parts))
ResultsStore.load = timed(ResultsStore.load, "reading runs", parts)
ResultsStore.table = timed(ResultsStore.table, "the runs' table", parts)
module = importlib.import_module(EXPERIMENTS[args.one])
if hasattr(module, "save_figure"):
    module.save_figure = timed(module.save_figure, "figures")
with tempfile.TemporaryDirectory() as out:
    changes = [f"--set={change}" for change in args.set]
    cli.main(["reproduce", args.one, "--full", "--quiet", "--out", out, *changes])
total = time.process_time() - start
training = spent["simulate"] - spent["measure"]  # (simulate measures finished runs)
rest = total - imported - spent["simulate"] - spent["figures"]
print(
    f"{args.one} ({args.threads} thread(s)), CPU seconds: total {total:.1f} = imports "
    f"{imported:.1f} + training {training:.1f} + measuring {spent['measure']:.1f} + figures "
    f"{spent['figures']:.1f} + rest {rest:.1f}"
)
print("  of which: " + ", ".join(f"{name} {seconds:.1f}" for name, seconds in parts.items()))
