"""ℓp mirror descent's step of one tensor, compiled by numba: θ ← θ − η·g (or θ − g/D), then
w = sign(θ)|θ|^k' and the copy of w, in one pass over memory (`fused_mirror`).

Imported only by `fused_mirror` (through `compiled_backend`, which sets numba's cache
directory first). The arithmetic is torch's, operation for operation, so the results are
torch's bit for bit: the subtraction as torch's CPU kernel rounds it (one fused multiply-add
for θ + (−η)·g; g/D rounded, then subtracted), the powers by the same squarings as
`norms.power_`, in the dtype of the tensors. The work goes block by block, so that each of
the step's passes runs over a block in cache and vectorises.
"""

import math

import numpy as np
from numba import njit
from numba.core.extending import intrinsic

from ..norms import SQUARE

ENTRIES_PER_BLOCK = 2048  # entries per block: the block's three buffers stay in L1/L2


@intrinsic
def fma(typingctx, a, b, c):
    """a·b + c rounded once (llvm.fma), as torch's vectorised add with alpha rounds it."""
    signature = a(a, b, c)

    def codegen(context, builder, sig, args):
        return builder.fma(*args)

    return signature, codegen


@njit(cache=True, error_model="numpy", boundscheck=False)
def mirror_step(theta, g, w, copy, alpha, divisor, divide, even, k, steps):
    """In place, entry by entry: θ ← fma(alpha, g, θ) (divide: θ ← θ − g/divisor); then
    w = sign(θ)·y^k with y = θ² (even) or |θ|, y^k by squarings (`steps` after the first
    y², each SQUARE or TIMES_BASE), and copy ← w. Flat arrays of one dtype."""
    n = theta.size
    t = np.empty(ENTRIES_PER_BLOCK, dtype=theta.dtype)
    y = np.empty(ENTRIES_PER_BLOCK, dtype=theta.dtype)
    r = np.empty(ENTRIES_PER_BLOCK, dtype=theta.dtype)
    for start in range(0, n, ENTRIES_PER_BLOCK):
        m = min(ENTRIES_PER_BLOCK, n - start)
        th, grad = theta[start : start + m], g[start : start + m]
        if divide:
            for i in range(m):
                t[i] = th[i] - grad[i] / divisor
        else:
            for i in range(m):
                t[i] = fma(alpha, grad[i], th[i])
        for i in range(m):
            th[i] = t[i]
        if even:
            for i in range(m):
                y[i] = t[i] * t[i]
        else:
            for i in range(m):
                y[i] = abs(t[i])
        if k == 1:
            for i in range(m):
                r[i] = y[i]
        else:
            for i in range(m):
                r[i] = y[i] * y[i]
            for j in range(steps.size):
                if steps[j] == SQUARE:
                    for i in range(m):
                        r[i] = r[i] * r[i]
                else:
                    for i in range(m):
                        r[i] = r[i] * y[i]
        out, kept = w[start : start + m], copy[start : start + m]
        for i in range(m):
            out[i] = math.copysign(r[i], t[i])
        for i in range(m):
            kept[i] = out[i]
