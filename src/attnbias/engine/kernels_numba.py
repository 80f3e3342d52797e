"""The mirror-descent core's step, compiled by numba: `kernel.Stack.scaled_gradients` (fixed
head, parameter W) and `update.step` for one run at a time, many steps in one call.

Imported only by `engine.compiled` (which sets numba's cache directory first and falls back to
torch without numba). The arithmetic is the fused step's (`engine.fused`), written out per run
as loops over its 10×10 matrices: no tensor operation to dispatch, each run's W in cache for all
its steps. Intermediate values are float64 whatever the state's dtype; the state (W, θ, the
momentum buffer) is stored in its own dtype after every step. Powers by their exponent's kind
(x², √x, x^k·√x, pow), per run, as a batch of one p would take them, and thirds (ℓ1.75's 4/3
and 7/3) by the cube root. The softmax's and the gradient's exps, the offset's logs and the
cube roots are this module's own, branch-free (`exp_lanes`, `log_lanes`, `cbrt_lanes`: within
1 ulp of libm's exp and log and of the exact cube root), so that the lanes of
`engine.kernels_lanes` pack them; libm's pow is called for the other exponents.
"""

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

# loss codes (compiled.LOSS_CODES) and rule codes (optim.divisors.STEP_RULES: none, per_tensor,
# global, loss, polyak)
LOGISTIC, EXPONENTIAL, CORRELATION = 0, 1, 2
NONE, PER_TENSOR, GLOBAL, LOSS, POLYAK = 0, 1, 2, 3, 4
LOG_SMALL = -30.0  # losses._LOG_SMALL
# (every function with error_model="numpy": x/0 is ±inf or NaN as in torch, not a Python
# ZeroDivisionError; Polyak's L − L* = 0 divides by it)


# e^x rounds to 0 for every x below −745.14 (half the smallest subnormal); libm reaches that 0
# through its slow underflow path, ~5× a normal exp (benchmarks/bench_scalar_costs.py), and
# late in a run most of the logits' exponentials are such zeros
UNDERFLOW = -746.0


@njit(cache=True, inline="always", error_model="numpy")
def exp_or_zero(x):
    """math.exp(x), bit for bit, without libm's call where it is 0."""
    return 0.0 if x < UNDERFLOW else math.exp(x)


# e^x = 2^k e^r, x = k ln 2 + r, |r| ≤ ln 2 / 2: ln 2 in two parts (fdlibm's: k·LN2_HI is exact
# for |k| < 2^20), e^r by its Taylor polynomial to r^13 (the next term is below 5e-18 e^r)
LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
OVERFLOW = 709.782712893384  # the largest x whose e^x is finite
EXP_TERMS = tuple(1.0 / math.factorial(j) for j in range(14))
E2, E3, E4, E5, E6, E7, E8, E9, E10, E11, E12, E13 = EXP_TERMS[2:]


@intrinsic
def float_from_bits(typingctx, bits):
    """The float64 whose bits are the int64 `bits` (LLVM's bitcast: vector lanes take it)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def where(typingctx, condition, a, b):
    """a where `condition`, else b (in their common type), both evaluated: LLVM's select. A
    conditional expression can compile to a branch, which keeps the lanes' blocks apart,
    unpacked."""
    common = typingctx.unify_pairs(a, b)
    if not isinstance(condition, types.Boolean) or common is None:
        return None

    def codegen(context, builder, signature, args):
        chosen, x, y = args
        x = context.cast(builder, x, signature.args[1], common)
        y = context.cast(builder, y, signature.args[2], common)
        return builder.select(chosen, x, y)

    return common(condition, a, b), codegen


@njit(cache=True, inline="always", error_model="numpy")
def exp_lanes(x):
    """e^x within 1 ulp of libm's (exp_or_zero's) everywhere, 0 below UNDERFLOW as there, ±inf
    and NaN as libm: arithmetic and selects only, no call and no branch, so that the compiler
    packs it into vector lanes (libm's exp is a scalar call; numba without SVML has no vector
    one). tests/test_engine_compiled.py measures the bound. 2^k is two normal factors, so
    that a subnormal result is rounded once."""
    c = min(max(x, UNDERFLOW), OVERFLOW + 1.0)
    k = math.floor(c * LOG2E + 0.5)
    r = (c - k * LN2_HI) - k * LN2_LO
    # Horner, written out (a loop here would have to be unrolled before the lanes pack)
    e = ((((((E13 * r + E12) * r + E11) * r + E10) * r + E9) * r + E8) * r + E7) * r + E6
    e = (((((e * r + E5) * r + E4) * r + E3) * r + E2) * r + 1.0) * r + 1.0
    j = np.int64(k)
    half = j >> 1
    e = e * float_from_bits((half + 1023) << 52) * float_from_bits((j - half + 1023) << 52)
    e = where(x < UNDERFLOW, 0.0, e)
    e = where(x > OVERFLOW, math.inf, e)
    return where(x != x, x, e)


@intrinsic
def bits_of_float(typingctx, x):
    """The int64 whose bits are the float64 `x` (LLVM's bitcast)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


# log x = k ln 2 + log(1 + f), x = 2^k (1 + f), √2/2 ≤ 1 + f < √2: log(1 + f) = f − f²/2 +
# s (f²/2 + R), s = f / (2 + f), R a polynomial in s² (fdlibm's e_log.c, its coefficients)
LG1, LG2, LG3 = 6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01
LG4, LG5, LG6 = 2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01
LG7 = 1.479819860511658591e-01
SQRT2 = 1.4142135623730951
TINY = 2.2250738585072014e-308  # the smallest normal float64: below it, scale by 2^54 first
MANTISSA = (1 << 52) - 1
ONE_BITS = 1023 << 52


@njit(cache=True, inline="always", error_model="numpy")
def exponent_and_mantissa(x):
    """(e, m) with x = 2^e m, e an int64 and m in [1, 2), for finite x > 0 (a subnormal x is
    scaled by 2^54 first, and e counts it): arithmetic and selects only, as exp_lanes. The
    split that log_lanes and cbrt_lanes start from."""
    small = x < TINY
    bits = bits_of_float(x * where(small, 18014398509481984.0, 1.0))  # 2^54
    e = ((bits >> 52) & 0x7FF) - where(small, np.int64(1077), np.int64(1023))
    return e, float_from_bits((bits & MANTISSA) | ONE_BITS)


@njit(cache=True, inline="always", error_model="numpy")
def log_lanes(x):
    """log x within 1 ulp of libm's for every x ≥ 0, −inf at 0, NaN below 0 and at NaN, inf at
    inf: arithmetic and selects only, as exp_lanes (tests/test_engine_compiled.py)."""
    k, m = exponent_and_mantissa(x)
    big = m > SQRT2
    m = m * where(big, 0.5, 1.0)
    k = k + where(big, np.int64(1), np.int64(0))
    f = m - 1.0  # exact
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    R = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7))) + w * (LG2 + w * (LG4 + w * LG6))
    half = 0.5 * f * f
    c = float(k)
    v = c * LN2_HI - ((half - (s * (half + R) + c * LN2_LO)) - f)
    v = where(x == 0.0, -math.inf, v)
    v = where(x == math.inf, math.inf, v)
    return where((x < 0.0) | (x != x), math.nan, v)


CBRT2, CBRT4 = 1.2599210498948732, 1.5874010519681994  # ∛2, ∛4


@njit(cache=True, inline="always", error_model="numpy")
def cbrt_lanes(x):
    """∛x for x ≥ 0 within 1 ulp of the exact cube root (tested; glibc's cbrt is up to 3 ulp
    off it), branch-free as exp_lanes: x = 2^e m,
    m in [1, 2), ∛x = 2^⌊e/3⌋ ∛(2^(e mod 3) m); a quadratic in m (within 3e-3), two steps of
    Halley's iteration and one of Newton's; ∛0 = 0, ∛inf = inf, NaN."""
    e, m = exponent_and_mantissa(x)
    whole = math.floor(float(e) / 3.0)  # (54, the subnormals' shift, is a multiple of 3)
    rest = float(e) - 3.0 * whole
    s = m * where(rest == 2.0, 4.0, where(rest == 1.0, 2.0, 1.0))
    c = 0.6107 + m * (0.4575 - 0.0682 * m)
    c = c * where(rest == 2.0, CBRT4, where(rest == 1.0, CBRT2, 1.0))
    c3 = c * c * c
    c = c * (c3 + 2.0 * s) / (2.0 * c3 + s)
    c3 = c * c * c
    c = c * (c3 + 2.0 * s) / (2.0 * c3 + s)
    c = c - (c * c * c - s) / (3.0 * c * c)
    v = c * float_from_bits((np.int64(whole) + 1023) << 52)
    return where((x == 0.0) | (x == math.inf) | (x != x), x, v)


@njit(cache=True, inline="always", error_model="numpy")
def log1p_lanes(x):
    """log(1 + x) for finite x ≥ 0 from log_lanes(1 + x) and the rounding of 1 + x, as a term
    of its own (within 1 ulp of libm's log1p on [0, 1], where the kernels take it: tested)."""
    one = 1.0 + x
    return log_lanes(one) + (x - (one - 1.0)) / one


@njit(cache=True, inline="always", error_model="numpy")
def log_abs_derivative_lanes(u, loss):
    """log|ℓ'(u)| (`losses.MarginLoss.log_abs_derivative`), branch-free: the logistic's
    −softplus(u) by log1p_lanes and exp_lanes, the loss selected, not branched on."""
    softplus = where(u > 0.0, u, 0.0) + log1p_lanes(exp_lanes(-abs(u)))
    v = where(loss == EXPONENTIAL, -u, -softplus)
    return where(loss == CORRELATION, 0.0, v)


@njit(cache=True, inline="always", error_model="numpy")
def kind_of(e):
    """How `power` raises to e > 0: (kind, k) with kind 0: x, 1: x², 2: √x, 3: x^k (whole
    k ≤ 64), 4: x^k·√x (k ≥ 1), 6: x^(k/3) by the cube root (`third_power`, k < 9 not a
    multiple of 3), 5: pow (0–4 as `norms.power_` and `norms.half_power_`)."""
    if e == 1.0:
        return 0, 1
    if e == 2.0:
        return 1, 2
    if e == 0.5:
        return 2, 0
    k = math.floor(e)
    if e == k and k <= 64.0:
        return 3, int(k)
    if e - k == 0.5 and k >= 1.0:
        return 4, int(k)
    thirds = round(3.0 * e)
    if thirds % 3 != 0 and thirds < 9 and abs(3.0 * e - thirds) <= 8e-16 * thirds:
        return 6, int(thirds)  # e is m/3 as its float holds it (ℓ1.75: 4/3 and 7/3)
    return 5, 0


@njit(cache=True, inline="always", error_model="numpy")
def power(x, e, kind, k):
    """x^e for x ≥ 0, (kind, k) = kind_of(e)."""
    if kind == 0:
        return x
    if kind == 1:
        return x * x
    if kind == 2:
        return math.sqrt(x)
    if kind == 3:
        return x**k
    if kind == 4:
        return x**k * math.sqrt(x)
    if kind == 6:
        return third_power(x, cbrt_lanes(x), k)
    return x**e


@njit(cache=True, inline="always", error_model="numpy")
def third_power(x, c, m):
    """x^(m/3) from c = ∛x, m < 9 not a multiple of 3: within 4 ulp of the exact power
    (tests/test_engine_compiled.py), where pow of the float nearest m/3 is off it by up to
    |log x|·1e-16 relative (400 ulp at x = 1e-130); the choices by m are selects, the same
    in every lane."""
    y = where(m % 3 == 2, c * c, c)
    y = where(m > 3, y * x, y)
    return where(m > 6, y * x, y)


@njit(cache=True, inline="always", error_model="numpy")
def softplus(x):
    if x > 0.0:
        return x + math.log1p(exp_or_zero(-x))
    return math.log1p(exp_or_zero(x))


@njit(cache=True, inline="always", error_model="numpy")
def loss_value(u, loss):
    if loss == LOGISTIC:
        return softplus(-u)
    if loss == EXPONENTIAL:
        return exp_or_zero(-u)
    return -u


@njit(cache=True, inline="always", error_model="numpy")
def loss_excess(u_star, delta, loss):
    """ℓ(u* + δ) − ℓ(u*) from δ (`losses.MarginLoss.excess`)."""
    if loss == LOGISTIC:
        return math.log1p(math.expm1(-delta) / (1.0 + exp_or_zero(u_star)))
    if loss == EXPONENTIAL:
        return exp_or_zero(-u_star) * math.expm1(-delta)
    return -delta


@njit(cache=True, inline="always", error_model="numpy")
def log_expm1_of_log_number(a):
    """log(e^x − 1) for x = e^a (`losses.log_expm1_of_log`)."""
    x = exp_or_zero(a)
    if a < LOG_SMALL:
        return a + x / 2
    return x + math.log(-math.expm1(-x))


@njit(cache=True, inline="always", error_model="numpy")
def log_loss_excess(u_star, log_drop, loss):
    """log(ℓ(u* + δ) − ℓ(u*)) from log(−δ) (`losses.MarginLoss.log_excess`)."""
    if loss == CORRELATION:
        return log_drop
    a = log_expm1_of_log_number(log_drop)
    if loss == EXPONENTIAL:
        return a - u_star
    a -= softplus(u_star)  # log log1p(e^a), `losses.log_log1p_of_log`
    if a < LOG_SMALL:
        return a - exp_or_zero(a) / 2
    return math.log(softplus(a))


@njit(cache=True, inline="always", error_model="numpy")
def polyak_log_step_of_run(log_norm, log_gap, c, cap):
    """`optim.divisors.polyak_log_step` of one run."""
    log_cap = math.log(cap)
    if log_norm == -math.inf:
        return log_cap
    return min(log_gap - math.log(c) - 2.0 * log_norm, log_cap) if log_gap == log_gap else log_gap


# The risk and Polyak's step (over L*, or over the optimal tokens: Polyak's "optimal" L*) are
# these three helpers, called, not inlined: the lane kernel calls them once per lane, and
# inlined eight times they would triple its compile time.
@njit(cache=True, error_model="numpy")
def optimal_token_shortfall(terms, total, shifted, yh, o):
    """Of one sample, from its softmax's terms e^{a_t − max a} (sum `total`), its shifted
    logits and its margins yh (T,), its optimal token o: (δ, log(−δ), ordered) with
    δ = Σ_t s_t (γ_t − γ_o) and log(−δ) = logsumexp_t (log s_t + log(γ_o − γ_t)) over the
    tokens below o (`losses.log_optimal_token_excess`); ordered: no token's margin is above o's."""
    delta = 0.0
    for t in range(yh.shape[0]):
        delta += terms[t] / total * (yh[t] - yh[o])
    ordered = True
    largest = -math.inf
    for t in range(yh.shape[0]):
        drop = yh[o] - yh[t]
        if drop < 0.0:
            ordered = False
        elif drop > 0.0:
            largest = max(largest, shifted[t] + math.log(drop))
    acc = 0.0
    if largest > -math.inf:
        for t in range(yh.shape[0]):
            drop = yh[o] - yh[t]
            if drop > 0.0:
                acc += exp_or_zero(shifted[t] + math.log(drop) - largest)
    return delta, largest + math.log(acc) - math.log(total), ordered


@njit(cache=True, error_model="numpy")
def mean_risk(u, shortfall, yh, opt, loss, over):
    """(1/n) Σ_i ℓ(u_i); where `over`, (1/n) Σ_i ℓ(u*_i + δ_i) − ℓ(u*_i) from the shortfalls
    δ (n,), u*_i = yh[i, opt[i]] (`losses.optimal_token_excess`)."""
    L = 0.0
    for i in range(u.shape[0]):
        if over:
            L += loss_excess(yh[i, opt[i]], shortfall[i], loss)
        else:
            L += loss_value(u[i], loss)
    return L / u.shape[0]


@njit(cache=True, error_model="numpy")
def polyak_divisor_of_run(norm, m, L, f_star, c, cap, log_drop, yh, opt, loss, over, tiny):
    """Polyak's D = e^{−(log η_t + m)} of one run from ‖∇L‖ e^{−m} = `norm` and its loss L;
    where `over` (its risk is L − L* over the optimal tokens opt (n,), every sample ordered),
    log(L − L*) as the logsumexp over the samples of log(ℓ(u* + δ_i) − ℓ(u*)), from their
    log(−δ_i) (`log_drop`, overwritten) and margins yh (n, T). 0: an infinite step (none)."""
    log_norm = m + math.log(norm)
    log_gap = math.log(max(L - f_star, 0.0)) if L == L else L
    if over:
        n = log_drop.shape[0]
        largest = -math.inf
        for i in range(n):
            log_drop[i] = log_loss_excess(yh[i, opt[i]], log_drop[i], loss)
            largest = max(largest, log_drop[i])
        acc = 0.0
        if largest > -math.inf:
            for i in range(n):
                acc += exp_or_zero(log_drop[i] - largest)
        log_gap = largest + math.log(acc) - math.log(n)
    exponent = polyak_log_step_of_run(log_norm, log_gap, c, cap) + m
    return 0.0 if exponent == math.inf else max(exp_or_zero(-exponent), tiny)


@njit(cache=True, inline="always", error_model="numpy")
def scale_safe_norm(G, q, kind, k, smallest, scratch):
    """‖G‖_q as m·‖G/m‖_q, m = max|G| (`norms.lp_norm`, mode "fused"); (kind, k) = kind_of(q).
    The powers first (into scratch: vector lanes), then their sum in the same order."""
    top = 0.0
    for a in range(G.shape[0]):
        for b in range(G.shape[1]):
            x = abs(G[a, b])
            if x > top or x != x:
                top = x
    if math.isinf(top):
        return top
    divisor = max(top, smallest)
    if kind == 1:
        for a in range(G.shape[0]):
            for b in range(G.shape[1]):
                x = abs(G[a, b]) / divisor
                scratch[a, b] = x * x
    elif kind == 4 and k == 1:
        for a in range(G.shape[0]):
            for b in range(G.shape[1]):
                x = abs(G[a, b]) / divisor
                scratch[a, b] = x * math.sqrt(x)
    elif kind == 6:  # (a loop without power's choices: the compiler vectorizes it)
        for a in range(G.shape[0]):
            for b in range(G.shape[1]):
                x = abs(G[a, b]) / divisor
                scratch[a, b] = third_power(x, cbrt_lanes(x), k)
    else:
        for a in range(G.shape[0]):
            for b in range(G.shape[1]):
                scratch[a, b] = power(abs(G[a, b]) / divisor, q, kind, k)
    total = 0.0
    for a in range(G.shape[0]):
        for b in range(G.shape[1]):
            total += scratch[a, b]
    root, whole = kind_of(1.0 / q)
    return power(total, 1.0 / q, root, whole) * top


@njit(cache=True, error_model="numpy")
def advance_numba(
    W, theta, buf, X, z, yh, rule, p, lr, cap, momentum, c, f_star, loss, steps, mirror,
    has_momentum, smallest, low, high, opt, excess, tiny, skip,
):  # fmt: skip
    """`steps` steps of every run but those `skip` marks (stepped in lanes, `kernels_lanes`),
    in place (W, θ, the momentum buffer; θ is W's when not `mirror`). Runs with `excess` take
    L − L* over their optimal tokens `opt` (R, n) as their loss
    (`losses.optimal_token_excess`; their f_star is 0). Returns -1, or the first run whose dual
    iterate θ⁺ left the range the torch step redoes in the log domain (p > 2: not a normal
    number in [low, high]; any p: not finite), after which the caller restores the state and
    steps with torch. tiny: the dtype's smallest normal number (Polyak's smallest divisor,
    `optim.divisors.polyak_divisors`)."""
    R, n, T, d = X.shape
    Wz = np.empty((n, d))
    logits = np.empty((n, T))
    terms = np.empty((n, T))
    r = np.empty((n, T))
    u = np.empty(n)
    shortfall = np.empty(n)  # δ_i = Σ_{t≠opt} s_t (γ_t − γ_opt) of the excess runs
    log_drop = np.empty(n)  # log(−δ_i), `losses.log_optimal_token_excess`
    top = np.empty(n, dtype=np.int64)
    xr = np.empty((n, d))
    G = np.empty((d, d))
    WT = np.empty((d, d), dtype=W.dtype)  # the run's Wᵀ: W z_i summed along its rows
    XT = np.empty((n, d, T))  # the run's X with t innermost: the logits' sums in lanes over t
    scratch = np.empty((d, d))
    log_n = math.log(n)
    for k in range(R):
        if skip[k]:
            continue
        code = rule[k]
        pk = p[k]
        q = pk / (pk - 1.0)
        inverse = 1.0 / (pk - 1.0)
        q_kind, q_whole = kind_of(q)
        inverse_kind, inverse_whole = kind_of(inverse)
        needs_loss = code == LOSS or code == POLYAK
        for a in range(d):
            for b in range(d):
                WT[b, a] = W[k, a, b]
        for i in range(n):
            for t in range(T):
                for a in range(d):
                    XT[i, a, t] = X[k, i, t, a]
        ordered = True  # every optimal token has its sample's largest margin
        for _ in range(steps):
            # logits a_{i,t} = x_{i,t}ᵀ W z_i, softmax, u_i = y_i f_i. Every sum here runs
            # over its index in ascending order (as a dot product would), but with the other
            # index innermost: independent lanes that the compiler vectorizes.
            for i in range(n):
                for a in range(d):
                    Wz[i, a] = 0.0
                for b in range(d):
                    zb = z[k, i, b]
                    for a in range(d):
                        Wz[i, a] += WT[b, a] * zb
                best, at = -math.inf, 0
                for t in range(T):
                    logits[i, t] = 0.0
                for a in range(d):
                    wa = Wz[i, a]
                    for t in range(T):
                        logits[i, t] += XT[i, a, t] * wa
                for t in range(T):
                    s = logits[i, t]
                    if s > best:
                        best, at = s, t
                top[i] = at
                # the exps in a loop of their own, which the compiler vectorizes (with the
                # sum in it, it could not: a float sum keeps its order), the sum after
                for t in range(T):
                    logits[i, t] -= best
                    terms[i, t] = exp_lanes(logits[i, t])
                total = 0.0
                for t in range(T):
                    total += terms[i, t]
                f = 0.0
                for t in range(T):
                    f += terms[i, t] / total * yh[k, i, t]
                u[i] = f
                if excess[k]:
                    shortfall[i], log_drop[i], in_order = optimal_token_shortfall(
                        terms[i], total, logits[i], yh[k, i], opt[k, i]
                    )
                    ordered = ordered and in_order
                # log|c_i s_{i,t}|: shifted − log Σ e + log|ℓ'(u_i)| − log n
                offset = log_abs_derivative_lanes(f, loss) - log_n - log_lanes(total)
                for t in range(T):
                    terms[i, t] = logits[i, t] + offset
            m = -math.inf
            for i in range(n):
                for t in range(T):
                    if t != top[i] and terms[i, t] > m:
                        m = terms[i, t]
            if not math.isfinite(m):
                m = 0.0
            # r_{i,t} = e^{terms − m}·(y f − y h); the top token's is −Σ of the others
            for i in range(n):
                for t in range(T):  # (as above; the top token's selected away, not branched)
                    x = exp_lanes(terms[i, t] - m) * (u[i] - yh[k, i, t])
                    r[i, t] = where(t == top[i], 0.0, x)
                rest = 0.0
                for t in range(T):
                    rest += r[i, t]
                r[i, top[i]] = -rest
                for a in range(d):
                    xr[i, a] = 0.0
                for t in range(T):
                    rt = r[i, t]
                    for a in range(d):
                        xr[i, a] += rt * X[k, i, t, a]
            for a in range(d):
                for b in range(d):
                    G[a, b] = 0.0
                for i in range(n):
                    xa = xr[i, a]
                    for b in range(d):
                        G[a, b] += xa * z[k, i, b]
            # the rule's scale and divisor (`update.in_rule_scale`, `optim.divisors.divisors`)
            L = mean_risk(u, shortfall, yh[k], opt[k], loss, excess[k]) if needs_loss else 0.0
            if code != PER_TENSOR and code != GLOBAL and code != POLYAK:
                scale = exp_or_zero(m)
                for a in range(d):
                    for b in range(d):
                        G[a, b] *= scale
            if code == PER_TENSOR or code == GLOBAL:
                D = scale_safe_norm(G, q, q_kind, q_whole, smallest, scratch)
            elif code == LOSS:
                D = L
            elif code == POLYAK:  # G in its own scale
                norm = scale_safe_norm(G, 2.0, 1, 2, smallest, scratch)
                D = polyak_divisor_of_run(
                    norm, m, L, f_star[k], c[k], cap[k], log_drop, yh[k], opt[k], loss,
                    excess[k] and ordered, tiny,
                )  # fmt: skip
            else:
                D = 1.0
            if D == 0.0:  # a zero gradient or loss (Polyak's: an infinite η_t e^m): no step
                D = math.inf
            # u = g/D, momentum, θ ← θ − η u, w = (∇ψ)⁻¹(θ); each a loop of its own (vector
            # lanes), the range check after (a failed step's state is restored by the caller)
            rate = lr[k]
            for a in range(d):
                for b in range(d):
                    step = G[a, b] / D
                    if has_momentum:
                        buf[k, a, b] = momentum[k] * buf[k, a, b] + step
                        step = buf[k, a, b]
                    G[a, b] = step
            if not mirror:
                for a in range(d):
                    for b in range(d):
                        W[k, a, b] = W[k, a, b] - G[a, b] * rate
            else:
                for a in range(d):
                    for b in range(d):
                        theta[k, a, b] = theta[k, a, b] - G[a, b] * rate
                for a in range(d):
                    for b in range(d):
                        size = abs(theta[k, a, b])
                        if not (size <= high and (pk <= 2.0 or size >= low)):
                            return k
                if inverse_kind == 2:
                    for a in range(d):
                        for b in range(d):
                            x = theta[k, a, b]
                            W[k, a, b] = math.copysign(math.sqrt(abs(x)), x)
                elif inverse_kind == 6:
                    for a in range(d):
                        for b in range(d):
                            x = theta[k, a, b]
                            w = third_power(abs(x), cbrt_lanes(abs(x)), inverse_whole)
                            W[k, a, b] = math.copysign(w, x)
                else:
                    for a in range(d):
                        for b in range(d):
                            x = theta[k, a, b]
                            W[k, a, b] = math.copysign(
                                power(abs(x), inverse, inverse_kind, inverse_whole), x
                            )
            for a in range(d):
                for b in range(d):
                    WT[b, a] = W[k, a, b]
    return -1


@njit(cache=True)
def gather_lanes(a, runs, out):
    """out[g, j, l] = a[runs[g·L + l], j] for a (R, m), out (G, m, L) (`compiled.in_lanes`):
    the L runs of a group read side by side, each in order."""
    G, m, L = out.shape
    for g in range(G):
        for j in range(m):
            for lane in range(L):
                out[g, j, lane] = a[runs[g * L + lane], j]


@njit(cache=True)
def scatter_lanes(lanes, runs, a):
    """a[runs[g·L + l], j] = lanes[g, j, l], the inverse of `gather_lanes`."""
    G, m, L = lanes.shape
    for g in range(G):
        for lane in range(L):
            r = runs[g * L + lane]
            for j in range(m):
                a[r, j] = lanes[g, j, lane]
