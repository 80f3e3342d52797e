"""The compiled step with 8 runs side by side, written by
`engine.lanes_codegen` (do not edit: regenerate). See that module, and `engine.kernels_numba`,
whose per-run step this is, lane by lane."""

# Its helpers are compiled into this kernel, and numba's cache of it knows only this file, so a
# change of kernels_numba.py regenerates this one. Generated from kernels_numba.py of SHA-256
# 23a9bca54cc04205b2acd6f3fa7c056f27f92aaf080319a0c794ff252bbe4e0c

import math

import numpy as np
from numba import njit

from .kernels_numba import (
    GLOBAL,
    LOSS,
    PER_TENSOR,
    POLYAK,
    cbrt_lanes,
    exp_lanes,
    exp_or_zero,
    kind_of,
    log_abs_derivative_lanes,
    log_lanes,
    mean_risk,
    optimal_token_shortfall,
    polyak_divisor_of_run,
    power,
    third_power,
    where,
)
from .lanes_codegen import LANES


@njit(cache=True, error_model="numpy")
def advance_lanes(
    W, theta, buf, X, z, yh, opt, rule, p, excess, lr, cap, momentum, c, f_star, loss, steps,
    mirror, has_momentum, smallest, low, high, tiny,
):  # fmt: skip
    """`steps` steps of every group of LANES runs, in place: W, θ, the momentum buffer
    (G, d, d, LANES) in their dtype, X (G, n, T, d, LANES), z (G, n, d, LANES), yh
    (G, n, T, LANES), opt (G, n, LANES); lr, cap, momentum, c, f_star (G, LANES). Every run of
    group g has rule[g], p[g] and excess[g] (its L − L* over its optimal tokens). Returns -1,
    or g·LANES + lane of a run whose dual iterate θ⁺ left the range (as `advance_numba`: the
    caller restores the state and steps with torch)."""
    n, T, d = X.shape[1], X.shape[2], X.shape[3]
    Wz = np.empty((n, d, LANES))
    logits = np.empty((n, T, LANES))
    terms = np.empty((n, T, LANES))
    r = np.empty((n, T, LANES))
    u = np.empty((n, LANES))
    top = np.empty((n, LANES), dtype=np.int64)
    xr = np.empty((n, d, LANES))
    G = np.empty((d, d, LANES))
    shortfall = np.empty((n, LANES))
    log_drop = np.empty((n, LANES))
    log_n = math.log(n)
    for g in range(W.shape[0]):
        code = rule[g]
        pk = p[g]
        over = excess[g]
        q = 2.0 if code == POLYAK else pk / (pk - 1.0)  # Polyak's ‖∇L‖ is the ℓ2 norm
        inverse = 1.0 / (pk - 1.0)
        q_kind, q_whole = kind_of(q)
        root, root_whole = kind_of(1.0 / q)
        inverse_kind, inverse_whole = kind_of(inverse)
        ordered0 = True
        ordered1 = True
        ordered2 = True
        ordered3 = True
        ordered4 = True
        ordered5 = True
        ordered6 = True
        ordered7 = True
        for _ in range(steps):
            for i in range(n):
                for a in range(d):
                    s0 = 0.0
                    s1 = 0.0
                    s2 = 0.0
                    s3 = 0.0
                    s4 = 0.0
                    s5 = 0.0
                    s6 = 0.0
                    s7 = 0.0
                    for b in range(d):
                        s0 += W[g, a, b, 0] * z[g, i, b, 0]
                        s1 += W[g, a, b, 1] * z[g, i, b, 1]
                        s2 += W[g, a, b, 2] * z[g, i, b, 2]
                        s3 += W[g, a, b, 3] * z[g, i, b, 3]
                        s4 += W[g, a, b, 4] * z[g, i, b, 4]
                        s5 += W[g, a, b, 5] * z[g, i, b, 5]
                        s6 += W[g, a, b, 6] * z[g, i, b, 6]
                        s7 += W[g, a, b, 7] * z[g, i, b, 7]
                    Wz[i, a, 0] = s0
                    Wz[i, a, 1] = s1
                    Wz[i, a, 2] = s2
                    Wz[i, a, 3] = s3
                    Wz[i, a, 4] = s4
                    Wz[i, a, 5] = s5
                    Wz[i, a, 6] = s6
                    Wz[i, a, 7] = s7
                for t in range(T):
                    s0 = 0.0
                    s1 = 0.0
                    s2 = 0.0
                    s3 = 0.0
                    s4 = 0.0
                    s5 = 0.0
                    s6 = 0.0
                    s7 = 0.0
                    for a in range(d):
                        s0 += X[g, i, t, a, 0] * Wz[i, a, 0]
                        s1 += X[g, i, t, a, 1] * Wz[i, a, 1]
                        s2 += X[g, i, t, a, 2] * Wz[i, a, 2]
                        s3 += X[g, i, t, a, 3] * Wz[i, a, 3]
                        s4 += X[g, i, t, a, 4] * Wz[i, a, 4]
                        s5 += X[g, i, t, a, 5] * Wz[i, a, 5]
                        s6 += X[g, i, t, a, 6] * Wz[i, a, 6]
                        s7 += X[g, i, t, a, 7] * Wz[i, a, 7]
                    logits[i, t, 0] = s0
                    logits[i, t, 1] = s1
                    logits[i, t, 2] = s2
                    logits[i, t, 3] = s3
                    logits[i, t, 4] = s4
                    logits[i, t, 5] = s5
                    logits[i, t, 6] = s6
                    logits[i, t, 7] = s7
                best0 = -math.inf
                best1 = -math.inf
                best2 = -math.inf
                best3 = -math.inf
                best4 = -math.inf
                best5 = -math.inf
                best6 = -math.inf
                best7 = -math.inf
                at0 = 0
                at1 = 0
                at2 = 0
                at3 = 0
                at4 = 0
                at5 = 0
                at6 = 0
                at7 = 0
                for t in range(T):
                    v0 = logits[i, t, 0]
                    v1 = logits[i, t, 1]
                    v2 = logits[i, t, 2]
                    v3 = logits[i, t, 3]
                    v4 = logits[i, t, 4]
                    v5 = logits[i, t, 5]
                    v6 = logits[i, t, 6]
                    v7 = logits[i, t, 7]
                    at0 = where(v0 > best0, t, at0)
                    at1 = where(v1 > best1, t, at1)
                    at2 = where(v2 > best2, t, at2)
                    at3 = where(v3 > best3, t, at3)
                    at4 = where(v4 > best4, t, at4)
                    at5 = where(v5 > best5, t, at5)
                    at6 = where(v6 > best6, t, at6)
                    at7 = where(v7 > best7, t, at7)
                    best0 = where(v0 > best0, v0, best0)
                    best1 = where(v1 > best1, v1, best1)
                    best2 = where(v2 > best2, v2, best2)
                    best3 = where(v3 > best3, v3, best3)
                    best4 = where(v4 > best4, v4, best4)
                    best5 = where(v5 > best5, v5, best5)
                    best6 = where(v6 > best6, v6, best6)
                    best7 = where(v7 > best7, v7, best7)
                top[i, 0] = at0
                top[i, 1] = at1
                top[i, 2] = at2
                top[i, 3] = at3
                top[i, 4] = at4
                top[i, 5] = at5
                top[i, 6] = at6
                top[i, 7] = at7
                total0 = 0.0
                total1 = 0.0
                total2 = 0.0
                total3 = 0.0
                total4 = 0.0
                total5 = 0.0
                total6 = 0.0
                total7 = 0.0
                for t in range(T):
                    logits[i, t, 0] -= best0
                    logits[i, t, 1] -= best1
                    logits[i, t, 2] -= best2
                    logits[i, t, 3] -= best3
                    logits[i, t, 4] -= best4
                    logits[i, t, 5] -= best5
                    logits[i, t, 6] -= best6
                    logits[i, t, 7] -= best7
                    e0 = exp_lanes(logits[i, t, 0])
                    e1 = exp_lanes(logits[i, t, 1])
                    e2 = exp_lanes(logits[i, t, 2])
                    e3 = exp_lanes(logits[i, t, 3])
                    e4 = exp_lanes(logits[i, t, 4])
                    e5 = exp_lanes(logits[i, t, 5])
                    e6 = exp_lanes(logits[i, t, 6])
                    e7 = exp_lanes(logits[i, t, 7])
                    terms[i, t, 0] = e0
                    terms[i, t, 1] = e1
                    terms[i, t, 2] = e2
                    terms[i, t, 3] = e3
                    terms[i, t, 4] = e4
                    terms[i, t, 5] = e5
                    terms[i, t, 6] = e6
                    terms[i, t, 7] = e7
                    total0 += e0
                    total1 += e1
                    total2 += e2
                    total3 += e3
                    total4 += e4
                    total5 += e5
                    total6 += e6
                    total7 += e7
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                s4 = 0.0
                s5 = 0.0
                s6 = 0.0
                s7 = 0.0
                for t in range(T):
                    s0 += terms[i, t, 0] / total0 * yh[g, i, t, 0]
                    s1 += terms[i, t, 1] / total1 * yh[g, i, t, 1]
                    s2 += terms[i, t, 2] / total2 * yh[g, i, t, 2]
                    s3 += terms[i, t, 3] / total3 * yh[g, i, t, 3]
                    s4 += terms[i, t, 4] / total4 * yh[g, i, t, 4]
                    s5 += terms[i, t, 5] / total5 * yh[g, i, t, 5]
                    s6 += terms[i, t, 6] / total6 * yh[g, i, t, 6]
                    s7 += terms[i, t, 7] / total7 * yh[g, i, t, 7]
                u[i, 0] = s0
                u[i, 1] = s1
                u[i, 2] = s2
                u[i, 3] = s3
                u[i, 4] = s4
                u[i, 5] = s5
                u[i, 6] = s6
                u[i, 7] = s7
                if over:
                    shortfall[i, 0], log_drop[i, 0], in_order0 = optimal_token_shortfall(
                        terms[i, :, 0], total0, logits[i, :, 0],
                        yh[g, i, :, 0], opt[g, i, 0],
                    )  # fmt: skip
                    ordered0 = ordered0 and in_order0
                    shortfall[i, 1], log_drop[i, 1], in_order1 = optimal_token_shortfall(
                        terms[i, :, 1], total1, logits[i, :, 1],
                        yh[g, i, :, 1], opt[g, i, 1],
                    )  # fmt: skip
                    ordered1 = ordered1 and in_order1
                    shortfall[i, 2], log_drop[i, 2], in_order2 = optimal_token_shortfall(
                        terms[i, :, 2], total2, logits[i, :, 2],
                        yh[g, i, :, 2], opt[g, i, 2],
                    )  # fmt: skip
                    ordered2 = ordered2 and in_order2
                    shortfall[i, 3], log_drop[i, 3], in_order3 = optimal_token_shortfall(
                        terms[i, :, 3], total3, logits[i, :, 3],
                        yh[g, i, :, 3], opt[g, i, 3],
                    )  # fmt: skip
                    ordered3 = ordered3 and in_order3
                    shortfall[i, 4], log_drop[i, 4], in_order4 = optimal_token_shortfall(
                        terms[i, :, 4], total4, logits[i, :, 4],
                        yh[g, i, :, 4], opt[g, i, 4],
                    )  # fmt: skip
                    ordered4 = ordered4 and in_order4
                    shortfall[i, 5], log_drop[i, 5], in_order5 = optimal_token_shortfall(
                        terms[i, :, 5], total5, logits[i, :, 5],
                        yh[g, i, :, 5], opt[g, i, 5],
                    )  # fmt: skip
                    ordered5 = ordered5 and in_order5
                    shortfall[i, 6], log_drop[i, 6], in_order6 = optimal_token_shortfall(
                        terms[i, :, 6], total6, logits[i, :, 6],
                        yh[g, i, :, 6], opt[g, i, 6],
                    )  # fmt: skip
                    ordered6 = ordered6 and in_order6
                    shortfall[i, 7], log_drop[i, 7], in_order7 = optimal_token_shortfall(
                        terms[i, :, 7], total7, logits[i, :, 7],
                        yh[g, i, :, 7], opt[g, i, 7],
                    )  # fmt: skip
                    ordered7 = ordered7 and in_order7
                offset0 = log_abs_derivative_lanes(u[i, 0], loss) - log_n - log_lanes(total0)
                offset1 = log_abs_derivative_lanes(u[i, 1], loss) - log_n - log_lanes(total1)
                offset2 = log_abs_derivative_lanes(u[i, 2], loss) - log_n - log_lanes(total2)
                offset3 = log_abs_derivative_lanes(u[i, 3], loss) - log_n - log_lanes(total3)
                offset4 = log_abs_derivative_lanes(u[i, 4], loss) - log_n - log_lanes(total4)
                offset5 = log_abs_derivative_lanes(u[i, 5], loss) - log_n - log_lanes(total5)
                offset6 = log_abs_derivative_lanes(u[i, 6], loss) - log_n - log_lanes(total6)
                offset7 = log_abs_derivative_lanes(u[i, 7], loss) - log_n - log_lanes(total7)
                for t in range(T):
                    put0 = logits[i, t, 0] + offset0
                    put1 = logits[i, t, 1] + offset1
                    put2 = logits[i, t, 2] + offset2
                    put3 = logits[i, t, 3] + offset3
                    put4 = logits[i, t, 4] + offset4
                    put5 = logits[i, t, 5] + offset5
                    put6 = logits[i, t, 6] + offset6
                    put7 = logits[i, t, 7] + offset7
                    terms[i, t, 0] = put0
                    terms[i, t, 1] = put1
                    terms[i, t, 2] = put2
                    terms[i, t, 3] = put3
                    terms[i, t, 4] = put4
                    terms[i, t, 5] = put5
                    terms[i, t, 6] = put6
                    terms[i, t, 7] = put7
            m0 = -math.inf
            m1 = -math.inf
            m2 = -math.inf
            m3 = -math.inf
            m4 = -math.inf
            m5 = -math.inf
            m6 = -math.inf
            m7 = -math.inf
            for i in range(n):
                for t in range(T):
                    v0 = terms[i, t, 0]
                    v1 = terms[i, t, 1]
                    v2 = terms[i, t, 2]
                    v3 = terms[i, t, 3]
                    v4 = terms[i, t, 4]
                    v5 = terms[i, t, 5]
                    v6 = terms[i, t, 6]
                    v7 = terms[i, t, 7]
                    m0 = where((t != top[i, 0]) & (v0 > m0), v0, m0)
                    m1 = where((t != top[i, 1]) & (v1 > m1), v1, m1)
                    m2 = where((t != top[i, 2]) & (v2 > m2), v2, m2)
                    m3 = where((t != top[i, 3]) & (v3 > m3), v3, m3)
                    m4 = where((t != top[i, 4]) & (v4 > m4), v4, m4)
                    m5 = where((t != top[i, 5]) & (v5 > m5), v5, m5)
                    m6 = where((t != top[i, 6]) & (v6 > m6), v6, m6)
                    m7 = where((t != top[i, 7]) & (v7 > m7), v7, m7)
            m0 = where(math.isfinite(m0), m0, 0.0)
            m1 = where(math.isfinite(m1), m1, 0.0)
            m2 = where(math.isfinite(m2), m2, 0.0)
            m3 = where(math.isfinite(m3), m3, 0.0)
            m4 = where(math.isfinite(m4), m4, 0.0)
            m5 = where(math.isfinite(m5), m5, 0.0)
            m6 = where(math.isfinite(m6), m6, 0.0)
            m7 = where(math.isfinite(m7), m7, 0.0)
            for i in range(n):
                rest0 = 0.0
                rest1 = 0.0
                rest2 = 0.0
                rest3 = 0.0
                rest4 = 0.0
                rest5 = 0.0
                rest6 = 0.0
                rest7 = 0.0
                for t in range(T):
                    x0 = exp_lanes(terms[i, t, 0] - m0) * (u[i, 0] - yh[g, i, t, 0])
                    x1 = exp_lanes(terms[i, t, 1] - m1) * (u[i, 1] - yh[g, i, t, 1])
                    x2 = exp_lanes(terms[i, t, 2] - m2) * (u[i, 2] - yh[g, i, t, 2])
                    x3 = exp_lanes(terms[i, t, 3] - m3) * (u[i, 3] - yh[g, i, t, 3])
                    x4 = exp_lanes(terms[i, t, 4] - m4) * (u[i, 4] - yh[g, i, t, 4])
                    x5 = exp_lanes(terms[i, t, 5] - m5) * (u[i, 5] - yh[g, i, t, 5])
                    x6 = exp_lanes(terms[i, t, 6] - m6) * (u[i, 6] - yh[g, i, t, 6])
                    x7 = exp_lanes(terms[i, t, 7] - m7) * (u[i, 7] - yh[g, i, t, 7])
                    x0 = where(t == top[i, 0], 0.0, x0)
                    x1 = where(t == top[i, 1], 0.0, x1)
                    x2 = where(t == top[i, 2], 0.0, x2)
                    x3 = where(t == top[i, 3], 0.0, x3)
                    x4 = where(t == top[i, 4], 0.0, x4)
                    x5 = where(t == top[i, 5], 0.0, x5)
                    x6 = where(t == top[i, 6], 0.0, x6)
                    x7 = where(t == top[i, 7], 0.0, x7)
                    r[i, t, 0] = x0
                    r[i, t, 1] = x1
                    r[i, t, 2] = x2
                    r[i, t, 3] = x3
                    r[i, t, 4] = x4
                    r[i, t, 5] = x5
                    r[i, t, 6] = x6
                    r[i, t, 7] = x7
                    rest0 += x0
                    rest1 += x1
                    rest2 += x2
                    rest3 += x3
                    rest4 += x4
                    rest5 += x5
                    rest6 += x6
                    rest7 += x7
                r[i, top[i, 0], 0] = -rest0
                r[i, top[i, 1], 1] = -rest1
                r[i, top[i, 2], 2] = -rest2
                r[i, top[i, 3], 3] = -rest3
                r[i, top[i, 4], 4] = -rest4
                r[i, top[i, 5], 5] = -rest5
                r[i, top[i, 6], 6] = -rest6
                r[i, top[i, 7], 7] = -rest7
                for a in range(d):
                    s0 = 0.0
                    s1 = 0.0
                    s2 = 0.0
                    s3 = 0.0
                    s4 = 0.0
                    s5 = 0.0
                    s6 = 0.0
                    s7 = 0.0
                    for t in range(T):
                        s0 += r[i, t, 0] * X[g, i, t, a, 0]
                        s1 += r[i, t, 1] * X[g, i, t, a, 1]
                        s2 += r[i, t, 2] * X[g, i, t, a, 2]
                        s3 += r[i, t, 3] * X[g, i, t, a, 3]
                        s4 += r[i, t, 4] * X[g, i, t, a, 4]
                        s5 += r[i, t, 5] * X[g, i, t, a, 5]
                        s6 += r[i, t, 6] * X[g, i, t, a, 6]
                        s7 += r[i, t, 7] * X[g, i, t, a, 7]
                    xr[i, a, 0] = s0
                    xr[i, a, 1] = s1
                    xr[i, a, 2] = s2
                    xr[i, a, 3] = s3
                    xr[i, a, 4] = s4
                    xr[i, a, 5] = s5
                    xr[i, a, 6] = s6
                    xr[i, a, 7] = s7
            for a in range(d):
                for b in range(d):
                    s0 = 0.0
                    s1 = 0.0
                    s2 = 0.0
                    s3 = 0.0
                    s4 = 0.0
                    s5 = 0.0
                    s6 = 0.0
                    s7 = 0.0
                    for i in range(n):
                        s0 += xr[i, a, 0] * z[g, i, b, 0]
                        s1 += xr[i, a, 1] * z[g, i, b, 1]
                        s2 += xr[i, a, 2] * z[g, i, b, 2]
                        s3 += xr[i, a, 3] * z[g, i, b, 3]
                        s4 += xr[i, a, 4] * z[g, i, b, 4]
                        s5 += xr[i, a, 5] * z[g, i, b, 5]
                        s6 += xr[i, a, 6] * z[g, i, b, 6]
                        s7 += xr[i, a, 7] * z[g, i, b, 7]
                    G[a, b, 0] = s0
                    G[a, b, 1] = s1
                    G[a, b, 2] = s2
                    G[a, b, 3] = s3
                    G[a, b, 4] = s4
                    G[a, b, 5] = s5
                    G[a, b, 6] = s6
                    G[a, b, 7] = s7
            if code == LOSS or code == POLYAK:
                L0 = mean_risk(u[:, 0], shortfall[:, 0], yh[g, :, :, 0], opt[g, :, 0], loss, over)
                L1 = mean_risk(u[:, 1], shortfall[:, 1], yh[g, :, :, 1], opt[g, :, 1], loss, over)
                L2 = mean_risk(u[:, 2], shortfall[:, 2], yh[g, :, :, 2], opt[g, :, 2], loss, over)
                L3 = mean_risk(u[:, 3], shortfall[:, 3], yh[g, :, :, 3], opt[g, :, 3], loss, over)
                L4 = mean_risk(u[:, 4], shortfall[:, 4], yh[g, :, :, 4], opt[g, :, 4], loss, over)
                L5 = mean_risk(u[:, 5], shortfall[:, 5], yh[g, :, :, 5], opt[g, :, 5], loss, over)
                L6 = mean_risk(u[:, 6], shortfall[:, 6], yh[g, :, :, 6], opt[g, :, 6], loss, over)
                L7 = mean_risk(u[:, 7], shortfall[:, 7], yh[g, :, :, 7], opt[g, :, 7], loss, over)
                D0 = L0
                D1 = L1
                D2 = L2
                D3 = L3
                D4 = L4
                D5 = L5
                D6 = L6
                D7 = L7
            if code != PER_TENSOR and code != GLOBAL and code != POLYAK:
                scale0 = exp_or_zero(m0)
                scale1 = exp_or_zero(m1)
                scale2 = exp_or_zero(m2)
                scale3 = exp_or_zero(m3)
                scale4 = exp_or_zero(m4)
                scale5 = exp_or_zero(m5)
                scale6 = exp_or_zero(m6)
                scale7 = exp_or_zero(m7)
                for a in range(d):
                    for b in range(d):
                        G[a, b, 0] *= scale0
                        G[a, b, 1] *= scale1
                        G[a, b, 2] *= scale2
                        G[a, b, 3] *= scale3
                        G[a, b, 4] *= scale4
                        G[a, b, 5] *= scale5
                        G[a, b, 6] *= scale6
                        G[a, b, 7] *= scale7
                if code != LOSS:
                    D0 = 1.0
                    D1 = 1.0
                    D2 = 1.0
                    D3 = 1.0
                    D4 = 1.0
                    D5 = 1.0
                    D6 = 1.0
                    D7 = 1.0
            else:
                big0 = 0.0
                big1 = 0.0
                big2 = 0.0
                big3 = 0.0
                big4 = 0.0
                big5 = 0.0
                big6 = 0.0
                big7 = 0.0
                for a in range(d):
                    for b in range(d):
                        x0 = abs(G[a, b, 0])
                        x1 = abs(G[a, b, 1])
                        x2 = abs(G[a, b, 2])
                        x3 = abs(G[a, b, 3])
                        x4 = abs(G[a, b, 4])
                        x5 = abs(G[a, b, 5])
                        x6 = abs(G[a, b, 6])
                        x7 = abs(G[a, b, 7])
                        big0 = where((x0 > big0) | (x0 != x0), x0, big0)
                        big1 = where((x1 > big1) | (x1 != x1), x1, big1)
                        big2 = where((x2 > big2) | (x2 != x2), x2, big2)
                        big3 = where((x3 > big3) | (x3 != x3), x3, big3)
                        big4 = where((x4 > big4) | (x4 != x4), x4, big4)
                        big5 = where((x5 > big5) | (x5 != x5), x5, big5)
                        big6 = where((x6 > big6) | (x6 != x6), x6, big6)
                        big7 = where((x7 > big7) | (x7 != x7), x7, big7)
                cut0 = max(big0, smallest)
                cut1 = max(big1, smallest)
                cut2 = max(big2, smallest)
                cut3 = max(big3, smallest)
                cut4 = max(big4, smallest)
                cut5 = max(big5, smallest)
                cut6 = max(big6, smallest)
                cut7 = max(big7, smallest)
                acc0 = 0.0
                acc1 = 0.0
                acc2 = 0.0
                acc3 = 0.0
                acc4 = 0.0
                acc5 = 0.0
                acc6 = 0.0
                acc7 = 0.0
                if q_kind == 1:
                    for a in range(d):
                        for b in range(d):
                            x0 = abs(G[a, b, 0]) / cut0
                            x1 = abs(G[a, b, 1]) / cut1
                            x2 = abs(G[a, b, 2]) / cut2
                            x3 = abs(G[a, b, 3]) / cut3
                            x4 = abs(G[a, b, 4]) / cut4
                            x5 = abs(G[a, b, 5]) / cut5
                            x6 = abs(G[a, b, 6]) / cut6
                            x7 = abs(G[a, b, 7]) / cut7
                            acc0 += x0 * x0
                            acc1 += x1 * x1
                            acc2 += x2 * x2
                            acc3 += x3 * x3
                            acc4 += x4 * x4
                            acc5 += x5 * x5
                            acc6 += x6 * x6
                            acc7 += x7 * x7
                elif q_kind == 4 and q_whole == 1:
                    for a in range(d):
                        for b in range(d):
                            x0 = abs(G[a, b, 0]) / cut0
                            x1 = abs(G[a, b, 1]) / cut1
                            x2 = abs(G[a, b, 2]) / cut2
                            x3 = abs(G[a, b, 3]) / cut3
                            x4 = abs(G[a, b, 4]) / cut4
                            x5 = abs(G[a, b, 5]) / cut5
                            x6 = abs(G[a, b, 6]) / cut6
                            x7 = abs(G[a, b, 7]) / cut7
                            acc0 += x0 * math.sqrt(x0)
                            acc1 += x1 * math.sqrt(x1)
                            acc2 += x2 * math.sqrt(x2)
                            acc3 += x3 * math.sqrt(x3)
                            acc4 += x4 * math.sqrt(x4)
                            acc5 += x5 * math.sqrt(x5)
                            acc6 += x6 * math.sqrt(x6)
                            acc7 += x7 * math.sqrt(x7)
                elif q_kind == 6:
                    for a in range(d):
                        for b in range(d):
                            x0 = abs(G[a, b, 0]) / cut0
                            x1 = abs(G[a, b, 1]) / cut1
                            x2 = abs(G[a, b, 2]) / cut2
                            x3 = abs(G[a, b, 3]) / cut3
                            x4 = abs(G[a, b, 4]) / cut4
                            x5 = abs(G[a, b, 5]) / cut5
                            x6 = abs(G[a, b, 6]) / cut6
                            x7 = abs(G[a, b, 7]) / cut7
                            acc0 += third_power(x0, cbrt_lanes(x0), q_whole)
                            acc1 += third_power(x1, cbrt_lanes(x1), q_whole)
                            acc2 += third_power(x2, cbrt_lanes(x2), q_whole)
                            acc3 += third_power(x3, cbrt_lanes(x3), q_whole)
                            acc4 += third_power(x4, cbrt_lanes(x4), q_whole)
                            acc5 += third_power(x5, cbrt_lanes(x5), q_whole)
                            acc6 += third_power(x6, cbrt_lanes(x6), q_whole)
                            acc7 += third_power(x7, cbrt_lanes(x7), q_whole)
                else:
                    for a in range(d):
                        for b in range(d):
                            acc0 += power(abs(G[a, b, 0]) / cut0, q, q_kind, q_whole)
                            acc1 += power(abs(G[a, b, 1]) / cut1, q, q_kind, q_whole)
                            acc2 += power(abs(G[a, b, 2]) / cut2, q, q_kind, q_whole)
                            acc3 += power(abs(G[a, b, 3]) / cut3, q, q_kind, q_whole)
                            acc4 += power(abs(G[a, b, 4]) / cut4, q, q_kind, q_whole)
                            acc5 += power(abs(G[a, b, 5]) / cut5, q, q_kind, q_whole)
                            acc6 += power(abs(G[a, b, 6]) / cut6, q, q_kind, q_whole)
                            acc7 += power(abs(G[a, b, 7]) / cut7, q, q_kind, q_whole)
                D0 = big0 if math.isinf(big0) else power(acc0, 1.0 / q, root, root_whole) * big0
                D1 = big1 if math.isinf(big1) else power(acc1, 1.0 / q, root, root_whole) * big1
                D2 = big2 if math.isinf(big2) else power(acc2, 1.0 / q, root, root_whole) * big2
                D3 = big3 if math.isinf(big3) else power(acc3, 1.0 / q, root, root_whole) * big3
                D4 = big4 if math.isinf(big4) else power(acc4, 1.0 / q, root, root_whole) * big4
                D5 = big5 if math.isinf(big5) else power(acc5, 1.0 / q, root, root_whole) * big5
                D6 = big6 if math.isinf(big6) else power(acc6, 1.0 / q, root, root_whole) * big6
                D7 = big7 if math.isinf(big7) else power(acc7, 1.0 / q, root, root_whole) * big7
                if code == POLYAK:
                    D0 = polyak_divisor_of_run(
                        D0, m0, L0, f_star[g, 0], c[g, 0], cap[g, 0], log_drop[:, 0],
                        yh[g, :, :, 0], opt[g, :, 0], loss, over and ordered0, tiny,
                    )  # fmt: skip
                    D1 = polyak_divisor_of_run(
                        D1, m1, L1, f_star[g, 1], c[g, 1], cap[g, 1], log_drop[:, 1],
                        yh[g, :, :, 1], opt[g, :, 1], loss, over and ordered1, tiny,
                    )  # fmt: skip
                    D2 = polyak_divisor_of_run(
                        D2, m2, L2, f_star[g, 2], c[g, 2], cap[g, 2], log_drop[:, 2],
                        yh[g, :, :, 2], opt[g, :, 2], loss, over and ordered2, tiny,
                    )  # fmt: skip
                    D3 = polyak_divisor_of_run(
                        D3, m3, L3, f_star[g, 3], c[g, 3], cap[g, 3], log_drop[:, 3],
                        yh[g, :, :, 3], opt[g, :, 3], loss, over and ordered3, tiny,
                    )  # fmt: skip
                    D4 = polyak_divisor_of_run(
                        D4, m4, L4, f_star[g, 4], c[g, 4], cap[g, 4], log_drop[:, 4],
                        yh[g, :, :, 4], opt[g, :, 4], loss, over and ordered4, tiny,
                    )  # fmt: skip
                    D5 = polyak_divisor_of_run(
                        D5, m5, L5, f_star[g, 5], c[g, 5], cap[g, 5], log_drop[:, 5],
                        yh[g, :, :, 5], opt[g, :, 5], loss, over and ordered5, tiny,
                    )  # fmt: skip
                    D6 = polyak_divisor_of_run(
                        D6, m6, L6, f_star[g, 6], c[g, 6], cap[g, 6], log_drop[:, 6],
                        yh[g, :, :, 6], opt[g, :, 6], loss, over and ordered6, tiny,
                    )  # fmt: skip
                    D7 = polyak_divisor_of_run(
                        D7, m7, L7, f_star[g, 7], c[g, 7], cap[g, 7], log_drop[:, 7],
                        yh[g, :, :, 7], opt[g, :, 7], loss, over and ordered7, tiny,
                    )  # fmt: skip
            D0 = where(D0 == 0.0, math.inf, D0)
            D1 = where(D1 == 0.0, math.inf, D1)
            D2 = where(D2 == 0.0, math.inf, D2)
            D3 = where(D3 == 0.0, math.inf, D3)
            D4 = where(D4 == 0.0, math.inf, D4)
            D5 = where(D5 == 0.0, math.inf, D5)
            D6 = where(D6 == 0.0, math.inf, D6)
            D7 = where(D7 == 0.0, math.inf, D7)
            if has_momentum:
                for a in range(d):
                    for b in range(d):
                        u0 = G[a, b, 0] / D0
                        u1 = G[a, b, 1] / D1
                        u2 = G[a, b, 2] / D2
                        u3 = G[a, b, 3] / D3
                        u4 = G[a, b, 4] / D4
                        u5 = G[a, b, 5] / D5
                        u6 = G[a, b, 6] / D6
                        u7 = G[a, b, 7] / D7
                        put0 = momentum[g, 0] * buf[g, a, b, 0] + u0
                        put1 = momentum[g, 1] * buf[g, a, b, 1] + u1
                        put2 = momentum[g, 2] * buf[g, a, b, 2] + u2
                        put3 = momentum[g, 3] * buf[g, a, b, 3] + u3
                        put4 = momentum[g, 4] * buf[g, a, b, 4] + u4
                        put5 = momentum[g, 5] * buf[g, a, b, 5] + u5
                        put6 = momentum[g, 6] * buf[g, a, b, 6] + u6
                        put7 = momentum[g, 7] * buf[g, a, b, 7] + u7
                        buf[g, a, b, 0] = put0
                        buf[g, a, b, 1] = put1
                        buf[g, a, b, 2] = put2
                        buf[g, a, b, 3] = put3
                        buf[g, a, b, 4] = put4
                        buf[g, a, b, 5] = put5
                        buf[g, a, b, 6] = put6
                        buf[g, a, b, 7] = put7
                        put0 = buf[g, a, b, 0]
                        put1 = buf[g, a, b, 1]
                        put2 = buf[g, a, b, 2]
                        put3 = buf[g, a, b, 3]
                        put4 = buf[g, a, b, 4]
                        put5 = buf[g, a, b, 5]
                        put6 = buf[g, a, b, 6]
                        put7 = buf[g, a, b, 7]
                        G[a, b, 0] = put0
                        G[a, b, 1] = put1
                        G[a, b, 2] = put2
                        G[a, b, 3] = put3
                        G[a, b, 4] = put4
                        G[a, b, 5] = put5
                        G[a, b, 6] = put6
                        G[a, b, 7] = put7
                if not mirror:
                    for a in range(d):
                        for b in range(d):
                            put0 = W[g, a, b, 0] - G[a, b, 0] * lr[g, 0]
                            put1 = W[g, a, b, 1] - G[a, b, 1] * lr[g, 1]
                            put2 = W[g, a, b, 2] - G[a, b, 2] * lr[g, 2]
                            put3 = W[g, a, b, 3] - G[a, b, 3] * lr[g, 3]
                            put4 = W[g, a, b, 4] - G[a, b, 4] * lr[g, 4]
                            put5 = W[g, a, b, 5] - G[a, b, 5] * lr[g, 5]
                            put6 = W[g, a, b, 6] - G[a, b, 6] * lr[g, 6]
                            put7 = W[g, a, b, 7] - G[a, b, 7] * lr[g, 7]
                            W[g, a, b, 0] = put0
                            W[g, a, b, 1] = put1
                            W[g, a, b, 2] = put2
                            W[g, a, b, 3] = put3
                            W[g, a, b, 4] = put4
                            W[g, a, b, 5] = put5
                            W[g, a, b, 6] = put6
                            W[g, a, b, 7] = put7
                else:
                    for a in range(d):
                        for b in range(d):
                            put0 = theta[g, a, b, 0] - G[a, b, 0] * lr[g, 0]
                            put1 = theta[g, a, b, 1] - G[a, b, 1] * lr[g, 1]
                            put2 = theta[g, a, b, 2] - G[a, b, 2] * lr[g, 2]
                            put3 = theta[g, a, b, 3] - G[a, b, 3] * lr[g, 3]
                            put4 = theta[g, a, b, 4] - G[a, b, 4] * lr[g, 4]
                            put5 = theta[g, a, b, 5] - G[a, b, 5] * lr[g, 5]
                            put6 = theta[g, a, b, 6] - G[a, b, 6] * lr[g, 6]
                            put7 = theta[g, a, b, 7] - G[a, b, 7] * lr[g, 7]
                            theta[g, a, b, 0] = put0
                            theta[g, a, b, 1] = put1
                            theta[g, a, b, 2] = put2
                            theta[g, a, b, 3] = put3
                            theta[g, a, b, 4] = put4
                            theta[g, a, b, 5] = put5
                            theta[g, a, b, 6] = put6
                            theta[g, a, b, 7] = put7
            else:
                if not mirror:
                    for a in range(d):
                        for b in range(d):
                            put0 = W[g, a, b, 0] - G[a, b, 0] / D0 * lr[g, 0]
                            put1 = W[g, a, b, 1] - G[a, b, 1] / D1 * lr[g, 1]
                            put2 = W[g, a, b, 2] - G[a, b, 2] / D2 * lr[g, 2]
                            put3 = W[g, a, b, 3] - G[a, b, 3] / D3 * lr[g, 3]
                            put4 = W[g, a, b, 4] - G[a, b, 4] / D4 * lr[g, 4]
                            put5 = W[g, a, b, 5] - G[a, b, 5] / D5 * lr[g, 5]
                            put6 = W[g, a, b, 6] - G[a, b, 6] / D6 * lr[g, 6]
                            put7 = W[g, a, b, 7] - G[a, b, 7] / D7 * lr[g, 7]
                            W[g, a, b, 0] = put0
                            W[g, a, b, 1] = put1
                            W[g, a, b, 2] = put2
                            W[g, a, b, 3] = put3
                            W[g, a, b, 4] = put4
                            W[g, a, b, 5] = put5
                            W[g, a, b, 6] = put6
                            W[g, a, b, 7] = put7
                else:
                    for a in range(d):
                        for b in range(d):
                            put0 = theta[g, a, b, 0] - G[a, b, 0] / D0 * lr[g, 0]
                            put1 = theta[g, a, b, 1] - G[a, b, 1] / D1 * lr[g, 1]
                            put2 = theta[g, a, b, 2] - G[a, b, 2] / D2 * lr[g, 2]
                            put3 = theta[g, a, b, 3] - G[a, b, 3] / D3 * lr[g, 3]
                            put4 = theta[g, a, b, 4] - G[a, b, 4] / D4 * lr[g, 4]
                            put5 = theta[g, a, b, 5] - G[a, b, 5] / D5 * lr[g, 5]
                            put6 = theta[g, a, b, 6] - G[a, b, 6] / D6 * lr[g, 6]
                            put7 = theta[g, a, b, 7] - G[a, b, 7] / D7 * lr[g, 7]
                            theta[g, a, b, 0] = put0
                            theta[g, a, b, 1] = put1
                            theta[g, a, b, 2] = put2
                            theta[g, a, b, 3] = put3
                            theta[g, a, b, 4] = put4
                            theta[g, a, b, 5] = put5
                            theta[g, a, b, 6] = put6
                            theta[g, a, b, 7] = put7
            if mirror:
                inside0 = True
                inside1 = True
                inside2 = True
                inside3 = True
                inside4 = True
                inside5 = True
                inside6 = True
                inside7 = True
                for a in range(d):
                    for b in range(d):
                        size0 = abs(theta[g, a, b, 0])
                        size1 = abs(theta[g, a, b, 1])
                        size2 = abs(theta[g, a, b, 2])
                        size3 = abs(theta[g, a, b, 3])
                        size4 = abs(theta[g, a, b, 4])
                        size5 = abs(theta[g, a, b, 5])
                        size6 = abs(theta[g, a, b, 6])
                        size7 = abs(theta[g, a, b, 7])
                        inside0 = inside0 & (size0 <= high) & ((pk <= 2.0) | (size0 >= low))
                        inside1 = inside1 & (size1 <= high) & ((pk <= 2.0) | (size1 >= low))
                        inside2 = inside2 & (size2 <= high) & ((pk <= 2.0) | (size2 >= low))
                        inside3 = inside3 & (size3 <= high) & ((pk <= 2.0) | (size3 >= low))
                        inside4 = inside4 & (size4 <= high) & ((pk <= 2.0) | (size4 >= low))
                        inside5 = inside5 & (size5 <= high) & ((pk <= 2.0) | (size5 >= low))
                        inside6 = inside6 & (size6 <= high) & ((pk <= 2.0) | (size6 >= low))
                        inside7 = inside7 & (size7 <= high) & ((pk <= 2.0) | (size7 >= low))
                if not inside0:
                    return g * LANES + 0
                if not inside1:
                    return g * LANES + 1
                if not inside2:
                    return g * LANES + 2
                if not inside3:
                    return g * LANES + 3
                if not inside4:
                    return g * LANES + 4
                if not inside5:
                    return g * LANES + 5
                if not inside6:
                    return g * LANES + 6
                if not inside7:
                    return g * LANES + 7
                if inverse_kind == 2:
                    for a in range(d):
                        for b in range(d):
                            x0 = theta[g, a, b, 0]
                            x1 = theta[g, a, b, 1]
                            x2 = theta[g, a, b, 2]
                            x3 = theta[g, a, b, 3]
                            x4 = theta[g, a, b, 4]
                            x5 = theta[g, a, b, 5]
                            x6 = theta[g, a, b, 6]
                            x7 = theta[g, a, b, 7]
                            put0 = math.copysign(math.sqrt(abs(x0)), x0)
                            put1 = math.copysign(math.sqrt(abs(x1)), x1)
                            put2 = math.copysign(math.sqrt(abs(x2)), x2)
                            put3 = math.copysign(math.sqrt(abs(x3)), x3)
                            put4 = math.copysign(math.sqrt(abs(x4)), x4)
                            put5 = math.copysign(math.sqrt(abs(x5)), x5)
                            put6 = math.copysign(math.sqrt(abs(x6)), x6)
                            put7 = math.copysign(math.sqrt(abs(x7)), x7)
                            W[g, a, b, 0] = put0
                            W[g, a, b, 1] = put1
                            W[g, a, b, 2] = put2
                            W[g, a, b, 3] = put3
                            W[g, a, b, 4] = put4
                            W[g, a, b, 5] = put5
                            W[g, a, b, 6] = put6
                            W[g, a, b, 7] = put7
                elif inverse_kind == 6:
                    for a in range(d):
                        for b in range(d):
                            x0 = theta[g, a, b, 0]
                            x1 = theta[g, a, b, 1]
                            x2 = theta[g, a, b, 2]
                            x3 = theta[g, a, b, 3]
                            x4 = theta[g, a, b, 4]
                            x5 = theta[g, a, b, 5]
                            x6 = theta[g, a, b, 6]
                            x7 = theta[g, a, b, 7]
                            w0 = third_power(abs(x0), cbrt_lanes(abs(x0)), inverse_whole)
                            w1 = third_power(abs(x1), cbrt_lanes(abs(x1)), inverse_whole)
                            w2 = third_power(abs(x2), cbrt_lanes(abs(x2)), inverse_whole)
                            w3 = third_power(abs(x3), cbrt_lanes(abs(x3)), inverse_whole)
                            w4 = third_power(abs(x4), cbrt_lanes(abs(x4)), inverse_whole)
                            w5 = third_power(abs(x5), cbrt_lanes(abs(x5)), inverse_whole)
                            w6 = third_power(abs(x6), cbrt_lanes(abs(x6)), inverse_whole)
                            w7 = third_power(abs(x7), cbrt_lanes(abs(x7)), inverse_whole)
                            put0 = math.copysign(w0, x0)
                            put1 = math.copysign(w1, x1)
                            put2 = math.copysign(w2, x2)
                            put3 = math.copysign(w3, x3)
                            put4 = math.copysign(w4, x4)
                            put5 = math.copysign(w5, x5)
                            put6 = math.copysign(w6, x6)
                            put7 = math.copysign(w7, x7)
                            W[g, a, b, 0] = put0
                            W[g, a, b, 1] = put1
                            W[g, a, b, 2] = put2
                            W[g, a, b, 3] = put3
                            W[g, a, b, 4] = put4
                            W[g, a, b, 5] = put5
                            W[g, a, b, 6] = put6
                            W[g, a, b, 7] = put7
                else:
                    for a in range(d):
                        for b in range(d):
                            x0 = theta[g, a, b, 0]
                            x1 = theta[g, a, b, 1]
                            x2 = theta[g, a, b, 2]
                            x3 = theta[g, a, b, 3]
                            x4 = theta[g, a, b, 4]
                            x5 = theta[g, a, b, 5]
                            x6 = theta[g, a, b, 6]
                            x7 = theta[g, a, b, 7]
                            w0 = power(abs(x0), inverse, inverse_kind, inverse_whole)
                            w1 = power(abs(x1), inverse, inverse_kind, inverse_whole)
                            w2 = power(abs(x2), inverse, inverse_kind, inverse_whole)
                            w3 = power(abs(x3), inverse, inverse_kind, inverse_whole)
                            w4 = power(abs(x4), inverse, inverse_kind, inverse_whole)
                            w5 = power(abs(x5), inverse, inverse_kind, inverse_whole)
                            w6 = power(abs(x6), inverse, inverse_kind, inverse_whole)
                            w7 = power(abs(x7), inverse, inverse_kind, inverse_whole)
                            put0 = math.copysign(w0, x0)
                            put1 = math.copysign(w1, x1)
                            put2 = math.copysign(w2, x2)
                            put3 = math.copysign(w3, x3)
                            put4 = math.copysign(w4, x4)
                            put5 = math.copysign(w5, x5)
                            put6 = math.copysign(w6, x6)
                            put7 = math.copysign(w7, x7)
                            W[g, a, b, 0] = put0
                            W[g, a, b, 1] = put1
                            W[g, a, b, 2] = put2
                            W[g, a, b, 3] = put3
                            W[g, a, b, 4] = put4
                            W[g, a, b, 5] = put5
                            W[g, a, b, 6] = put6
                            W[g, a, b, 7] = put7
    return -1
