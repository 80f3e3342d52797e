"""Does numba vectorise the compiled step's arithmetic across runs? (issue 31, goal 2)

    python benchmarks/probe_simd.py [--repeats 20000]

The compiled step (`engine.kernels_numba`) takes one run at a time, every sum in a register.
Stepping 8 runs side by side, each array with the run innermost, would put the 8 runs in the
lanes of one AVX-512 register, if the compiler turned the loop over lanes into vector
instructions. This probe compiles the step's largest product in three forms (W z_i for 10×10 W,
summed over b; the gradient's Σ_i is the same shape), counts the packed and the scalar double
multiplies in numba's assembly of each, and times them per multiply-add (CPU time, best of 5).
It also says whether numba found Intel's SVML, without which no loop calling exp or pow
vectorises. A lane layout pays off only where the packed count is not 0.

A third form writes the 8 lanes out, each sum a named local: no loop over lanes is left, so
only LLVM's SLP vectoriser can pack them, and numba runs it only with NUMBA_SLP_VECTORIZE=1
(its default is 0; the probe prints the setting). Run it both ways to compare.
"""

import argparse
import re
import time

import numba
import numpy as np
from numba import njit

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--repeats", type=int, default=20000, help="products per timing")
args = parser.parse_args()

LANES = 8
D = 10


@njit(error_model="numpy")
def one_run_at_a_time(W, z, out, repeats):
    """As the compiled step: run k's W z, each entry a sum over b in a register."""
    for _ in range(repeats):
        for k in range(W.shape[0]):
            for a in range(D):
                acc = 0.0
                for b in range(D):
                    acc += W[k, a, b] * z[k, b]
                out[k, a] = acc


@njit(error_model="numpy")
def runs_in_lanes(W, z, out, repeats):
    """The same products, LANES runs side by side (the run innermost): each lane's sum in the
    same order, the loop over lanes the one a compiler would vectorise."""
    for _ in range(repeats):
        for a in range(D):
            for lane in range(LANES):
                out[a, lane] = 0.0
            for b in range(D):
                for lane in range(LANES):
                    out[a, lane] += W[a, b, lane] * z[b, lane]


@njit(error_model="numpy")
def runs_in_lanes_written_out(W, z, out, repeats):
    """The lane layout's products with each lane's sum a named local, in the same order."""
    for _ in range(repeats):
        for a in range(D):
            s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
            for b in range(D):
                w, x = W[a, b], z[b]
                s0 += w[0] * x[0]
                s1 += w[1] * x[1]
                s2 += w[2] * x[2]
                s3 += w[3] * x[3]
                s4 += w[4] * x[4]
                s5 += w[5] * x[5]
                s6 += w[6] * x[6]
                s7 += w[7] * x[7]
            out[a, 0], out[a, 1], out[a, 2], out[a, 3] = s0, s1, s2, s3
            out[a, 4], out[a, 5], out[a, 6], out[a, 7] = s4, s5, s6, s7


rng = np.random.default_rng(0)
W = rng.standard_normal((LANES, D, D))
z = rng.standard_normal((LANES, D))
lanes = (np.ascontiguousarray(W.transpose(1, 2, 0)), np.ascontiguousarray(z.T))
cases = {
    "one run at a time": (one_run_at_a_time, (W, z, np.empty((LANES, D)))),
    f"{LANES} runs in lanes": (runs_in_lanes, (*lanes, np.empty((D, LANES)))),
    "lanes written out": (runs_in_lanes_written_out, (*lanes, np.empty((D, LANES)))),
}
print(
    f"numba {numba.__version__}, SVML found: {numba.config.USING_SVML}, SLP vectoriser: "
    f"{'on' if numba.config.SLP_VECTORIZE else 'off'} (NUMBA_SLP_VECTORIZE)"
)
print(f"W z for {LANES} runs of 10×10 W ({LANES * D * D} multiply-adds), best of 5:")
for name, (kernel, arrays) in cases.items():
    kernel(*arrays, 1)
    assembly = kernel.inspect_asm(kernel.signatures[0])
    packed = len(re.findall(r"\bv?mulpd\b|\bvfn?m(add|sub)\d+pd\b", assembly))
    scalar = len(re.findall(r"\bv?mulsd\b|\bvfn?m(add|sub)\d+sd\b", assembly))
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        kernel(*arrays, args.repeats)
        best = min(best, time.process_time() - start)
    per = best / (args.repeats * LANES * D * D) * 1e9
    print(
        f"  {name:18s}: {per:.3f} ns a multiply-add; multiplies in its assembly: "
        f"{packed} packed, {scalar} scalar"
    )
out_one = cases["one run at a time"][1][2]
agree = all(np.array_equal(out_one, arrays[2].T) for _, arrays in list(cases.values())[1:])
print(f"  the three agree bit for bit: {agree}")
