"""The scalar costs that docs/ARCHITECTURE.md ("Issue 31's goals on a quiet machine") quotes
for the compiled step and the store, each against its neighbour in the same run.

    python benchmarks/bench_scalar_costs.py [--rounds 3]

- exp in a numba loop (CPU ns a call, best of --rounds): of arguments in [−5, −1] (libm's
  normal path), of arguments below −746 (its underflow path, whose result is 0), and the
  compiled step's `exp_or_zero` on the latter; the underflow path's ratio to the normal one.
- p = 1.75's powers: x^{4/3} by `pow` against x·∛x, and their largest relative difference.
- creating a small file (open with O_CREAT | O_EXCL, write 3,000 bytes, close) in a fresh
  directory of the system's temporary directory, as the store writes a run's five files:
  CPU ms a file.
Needs numba (the `compiled` extra).
"""

import argparse
import math
import os
import tempfile
import time

import numpy as np
from numba import njit

from attnbias.engine import compiled

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--rounds", type=int, default=3, help="best of this many (default 3)")
args = parser.parse_args()
kernels = compiled.kernels()
if kernels is None:
    raise SystemExit("bench_scalar_costs.py needs numba: pip install 'attnbias[compiled]'")
exp_or_zero = kernels.exp_or_zero
REPEATS = 100_000


# Four loops written out, each with its call in place: one loop taking the call as a compiled
# argument measured another thing (libm's normal exp 6.2-6.7 ns a call against 4.2-4.7 here)
@njit
def sum_exp(x, repeats):
    total = 0.0
    for _ in range(repeats):
        for value in x:
            total += math.exp(value)
    return total


@njit
def sum_exp_or_zero(x, repeats):
    total = 0.0
    for _ in range(repeats):
        for value in x:
            total += exp_or_zero(value)
    return total


@njit
def sum_pow(x, repeats):
    total = 0.0
    for _ in range(repeats):
        for value in x:
            total += value ** (4.0 / 3.0)
    return total


@njit
def sum_cbrt(x, repeats):
    total = 0.0
    for _ in range(repeats):
        for value in x:
            total += value * np.cbrt(value)
    return total


def nanoseconds(function, x) -> float:
    """Best of --rounds, CPU ns a call (compiled first)."""
    function(x, 1)
    best = math.inf
    for _ in range(args.rounds):
        start = time.process_time()
        function(x, REPEATS)
        best = min(best, time.process_time() - start)
    return best / (REPEATS * x.size) * 1e9


def file_milliseconds(files: int = 1500) -> float:
    """CPU ms to create, write and close one small file, best of --rounds."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    data, best = b"x" * 3000, math.inf
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as directory:
            start = time.process_time()
            for k in range(files):
                fd = os.open(os.path.join(directory, f"f{k}"), flags, 0o644)
                os.write(fd, data)
                os.close(fd)
            best = min(best, time.process_time() - start)
    return best / files * 1e3


rng = np.random.default_rng(0)
normal, underflowing = rng.uniform(-5.0, -1.0, 96), rng.uniform(-800.0, -796.0, 96)
plain, slow = nanoseconds(sum_exp, normal), nanoseconds(sum_exp, underflowing)
skipped = nanoseconds(sum_exp_or_zero, underflowing)
print(f"exp, numba, CPU ns a call (best of {args.rounds}):")
print(f"  libm, arguments in [-5, -1]: {plain:.1f}")
print(f"  libm, arguments below -746 (result 0): {slow:.1f} ({slow / plain:.1f}x the normal path)")
print(f"  exp_or_zero, arguments below -746: {skipped:.1f}")
x = rng.uniform(0.0, 3.0, 100)
by_pow, by_cbrt = nanoseconds(sum_pow, x), nanoseconds(sum_cbrt, x)
gap = np.max(np.abs(x ** (4 / 3) - x * np.cbrt(x)) / x ** (4 / 3))
print(f"x^(4/3), CPU ns a call: pow {by_pow:.1f}, x*cbrt(x) {by_cbrt:.1f} "
      f"({by_cbrt / by_pow:.2f}x); largest relative difference {gap:.1e}")  # fmt: skip
print(f"creating a 3,000-byte file: {file_milliseconds():.3f} CPU ms a file")
