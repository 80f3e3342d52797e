"""Writes `engine.kernels_lanes`: the compiled step with LANES runs side by side.

    python -c "import attnbias.engine.lanes_codegen as g; g.write()"

The per-run kernel (`engine.kernels_numba.advance_numba`) steps one run at a time; its sums over
10-entry rows are too short for LLVM to vectorise. Here every array has the run innermost and
every statement of the step is written out once per lane, each sum in a named local, so that
LLVM's SLP vectoriser packs the lanes into one register (numba runs it where
`numba.config.SLP_VECTORIZE` is set: `engine.compiled` sets it while it loads this kernel). Each
lane does the per-run kernel's operations in its order, with the same scalar calls, so a run
stepped in lanes is the per-run kernel's bit for bit (tests/test_engine_lanes.py), where numba
has no SVML (with it, LLVM could give the packed calls SVML's roundings: `engine.compiled` then
steps every run alone). The module is generated, not written by hand: the repetition lives here
once, and the test checks that the module on disk is this function's output. The output names
the SHA-256 of kernels_numba.py, whose helpers it compiles in: numba's cache of a kernel knows
only its own file, so a change of a helper must change this module too.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from pathlib import Path

LANES = 8

HEADER = '''"""The compiled step with {lanes} runs side by side, written by
`engine.lanes_codegen` (do not edit: regenerate). See that module, and `engine.kernels_numba`,
whose per-run step this is, lane by lane."""

# Its helpers are compiled into this kernel, and numba's cache of it knows only this file, so a
# change of kernels_numba.py regenerates this one. Generated from kernels_numba.py of SHA-256
# {helpers}

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
{ordered}        for _ in range(steps):
'''


def lanes(statements: str, indent: int) -> str:
    """The statements (lines; {l} the lane) once per lane, indented: each statement for every
    lane before the next, so that no lane's load comes after another lane's store (LLVM cannot
    tell two arrays apart, and would keep such a load in its place, unpacked). A block with
    an indented line or an `if` (a loop, a branch, a call over several lines) goes lane by
    lane. Each lane's own operations keep their order either way."""
    text = textwrap.dedent(statements).strip("\n")
    if any(line.startswith((" ", "if ")) for line in text.splitlines()):
        blocks = [text.format(l=lane) for lane in range(LANES)]
    else:
        lines = [part for line in text.splitlines() for part in value_then_store(line)]
        blocks = [line.format(l=lane) for line in lines for lane in range(LANES)]
    return "".join(textwrap.indent(block, " " * indent) + "\n" for block in blocks)


STORE = re.compile(r"^(?P<target>\w+\[[^\]]*\]) (?P<op>[-+*/]?)= (?P<value>.+)$")


def value_then_store(statement: str) -> list[str]:
    """A store into an array element as two statements, the value into a local first (so
    that every lane's loads come before the lanes' stores); other statements as they are.
    `a op= b` is `a = a op (b)`, the same operation."""
    match = STORE.match(statement)
    if match is None or re.fullmatch(r"\w+(\{l\})?", match["value"]):  # not one storing a local
        return [statement]
    target, op, value = match["target"], match["op"], match["value"]
    if op:
        value = f"{target} {op} ({value})"
    return ["put{l} = " + value, f"{target} = put{{l}}"]


def line(text: str, indent: int) -> str:
    return " " * indent + text + "\n"


def lane_sum(target: str, term: str, loop: str, indent: int) -> str:
    """target = Σ term over `loop`, in its order, each lane's sum in a local s{l}."""
    return (
        lanes("s{l} = 0.0", indent)
        + line(f"for {loop}:", indent)
        + lanes("s{l} += " + term, indent + 4)
        + lanes(target + " = s{l}", indent)
    )


def forward(indent: int) -> str:
    """Logits a_{i,t} = x_{i,t}ᵀ W z_i, the softmax, u_i = y_i f_i and log|c_i s_{i,t}|."""
    i4, i8 = indent + 4, indent + 8
    return "".join([
        line("for i in range(n):", indent),
        line("for a in range(d):", i4),
        lane_sum("Wz[i, a, {l}]", "W[g, a, b, {l}] * z[g, i, b, {l}]", "b in range(d)", i8),
        line("for t in range(T):", i4),
        lane_sum("logits[i, t, {l}]", "X[g, i, t, a, {l}] * Wz[i, a, {l}]", "a in range(d)", i8),
        lanes("best{l} = -math.inf\nat{l} = 0", i4),
        line("for t in range(T):", i4),
        lanes("""
            v{l} = logits[i, t, {l}]
            at{l} = where(v{l} > best{l}, t, at{l})
            best{l} = where(v{l} > best{l}, v{l}, best{l})
            """, i8),
        lanes("top[i, {l}] = at{l}\ntotal{l} = 0.0", i4),
        line("for t in range(T):", i4),
        lanes("""
            logits[i, t, {l}] -= best{l}
            e{l} = exp_lanes(logits[i, t, {l}])
            terms[i, t, {l}] = e{l}
            total{l} += e{l}
            """, i8),
        lane_sum("u[i, {l}]", "terms[i, t, {l}] / total{l} * yh[g, i, t, {l}]", "t in range(T)",
                 i4),
        line("if over:", i4),
        lanes("""
            shortfall[i, {l}], log_drop[i, {l}], in_order{l} = optimal_token_shortfall(
                terms[i, :, {l}], total{l}, logits[i, :, {l}],
                yh[g, i, :, {l}], opt[g, i, {l}],
            )  # fmt: skip
            ordered{l} = ordered{l} and in_order{l}
            """, i8),
        lanes("offset{l} = log_abs_derivative_lanes(u[i, {l}], loss) - log_n - log_lanes(total{l})",
              i4),
        line("for t in range(T):", i4),
        lanes("terms[i, t, {l}] = logits[i, t, {l}] + offset{l}", i8),
    ])  # fmt: skip


def backward(indent: int) -> str:
    """m, the largest log-term off the top tokens; r, Σ_t r x and the gradient G (in e^{-m})."""
    i4, i8 = indent + 4, indent + 8
    return "".join([
        lanes("m{l} = -math.inf", indent),
        line("for i in range(n):", indent),
        line("for t in range(T):", i4),
        lanes("""
            v{l} = terms[i, t, {l}]
            m{l} = where((t != top[i, {l}]) & (v{l} > m{l}), v{l}, m{l})
            """, i8),
        lanes("m{l} = where(math.isfinite(m{l}), m{l}, 0.0)", indent),
        line("for i in range(n):", indent),
        lanes("rest{l} = 0.0", i4),
        line("for t in range(T):", i4),
        lanes("""
            x{l} = exp_lanes(terms[i, t, {l}] - m{l}) * (u[i, {l}] - yh[g, i, t, {l}])
            x{l} = where(t == top[i, {l}], 0.0, x{l})
            r[i, t, {l}] = x{l}
            rest{l} += x{l}
            """, i8),
        lanes("r[i, top[i, {l}], {l}] = -rest{l}", i4),
        line("for a in range(d):", i4),
        lane_sum("xr[i, a, {l}]", "r[i, t, {l}] * X[g, i, t, a, {l}]", "t in range(T)", i8),
        line("for a in range(d):", indent),
        line("for b in range(d):", i4),
        lane_sum("G[a, b, {l}]", "xr[i, a, {l}] * z[g, i, b, {l}]", "i in range(n)", i8),
    ])  # fmt: skip


def divisor(indent: int) -> str:
    """D{l}: the rule's divisor (`update.in_rule_scale`, `optim.divisors.divisors`)."""
    i4, i8, i12 = indent + 4, indent + 8, indent + 12
    # Σ (|G|/cut)^q in the per-run kernel's order, by q's kind as it takes them
    powers = [
        ("if q_kind == 1:", "x{l} = abs(G[a, b, {l}]) / cut{l}\nacc{l} += x{l} * x{l}"),
        ("elif q_kind == 4 and q_whole == 1:",
         "x{l} = abs(G[a, b, {l}]) / cut{l}\nacc{l} += x{l} * math.sqrt(x{l})"),
        ("elif q_kind == 6:",
         "x{l} = abs(G[a, b, {l}]) / cut{l}\n"
         "acc{l} += third_power(x{l}, cbrt_lanes(x{l}), q_whole)"),
        ("else:", "acc{l} += power(abs(G[a, b, {l}]) / cut{l}, q, q_kind, q_whole)"),
    ]  # fmt: skip
    branches = [
        line(test, i4) + line("for a in range(d):", i8) + line("for b in range(d):", i12)
        + lanes(body, i12 + 4)
        for test, body in powers
    ]  # fmt: skip
    return "".join([
        line("if code == LOSS or code == POLYAK:", indent),
        lanes("L{l} = mean_risk(u[:, {l}], shortfall[:, {l}], yh[g, :, :, {l}], opt[g, :, {l}], "
              "loss, over)\nD{l} = L{l}", i4),
        line("if code != PER_TENSOR and code != GLOBAL and code != POLYAK:", indent),
        lanes("scale{l} = exp_or_zero(m{l})", i4),
        line("for a in range(d):", i4),
        line("for b in range(d):", i8),
        lanes("G[a, b, {l}] *= scale{l}", i12),
        line("if code != LOSS:", i4),
        lanes("D{l} = 1.0", i8),
        line("else:", indent),
        # ‖G‖_q as m·‖G/m‖_q, m = max|G| (`kernels_numba.scale_safe_norm`)
        lanes("big{l} = 0.0", i4),
        line("for a in range(d):", i4),
        line("for b in range(d):", i8),
        lanes("""
            x{l} = abs(G[a, b, {l}])
            big{l} = where((x{l} > big{l}) | (x{l} != x{l}), x{l}, big{l})
            """, i12),
        lanes("cut{l} = max(big{l}, smallest)\nacc{l} = 0.0", i4),
        *branches,
        lanes("D{l} = big{l} if math.isinf(big{l}) else "
              "power(acc{l}, 1.0 / q, root, root_whole) * big{l}", i4),
        line("if code == POLYAK:", i4),
        lanes("""
            D{l} = polyak_divisor_of_run(
                D{l}, m{l}, L{l}, f_star[g, {l}], c[g, {l}], cap[g, {l}], log_drop[:, {l}],
                yh[g, :, :, {l}], opt[g, :, {l}], loss, over and ordered{l}, tiny,
            )  # fmt: skip
            """, i8),
        lanes("D{l} = where(D{l} == 0.0, math.inf, D{l})", indent),
    ])  # fmt: skip


def update(indent: int) -> str:
    """u = G/D, momentum (every run of a batch with momentum: β·buf + u, the buffer in its
    dtype, as the per-run kernel); θ ← θ − η u, the range check, w = (∇ψ)⁻¹(θ); or
    W ← W − η u."""
    i4, i8, i12 = indent + 4, indent + 8, indent + 12

    def descent(step: str, at: int) -> str:  # W (or θ) ← W − η·step, one pass
        return "".join(
            line("if not mirror:", at)
            + line("for a in range(d):", at + 4)
            + line("for b in range(d):", at + 8)
            + lanes(f"W[g, a, b, {{l}}] = W[g, a, b, {{l}}] - {step} * lr[g, {{l}}]", at + 12)
            + line("else:", at)
            + line("for a in range(d):", at + 4)
            + line("for b in range(d):", at + 8)
            + lanes(f"theta[g, a, b, {{l}}] = theta[g, a, b, {{l}}] - {step} * lr[g, {{l}}]",
                    at + 12)
        )  # fmt: skip

    return "".join([
        # u = G/D in the pass that uses it (without momentum: the descent's, so that G is read
        # once), the same operations in the same order as the per-run kernel's
        line("if has_momentum:", indent),
        line("for a in range(d):", i4),
        line("for b in range(d):", i8),
        lanes("u{l} = G[a, b, {l}] / D{l}\n"
              "buf[g, a, b, {l}] = momentum[g, {l}] * buf[g, a, b, {l}] + u{l}\n"
              "G[a, b, {l}] = buf[g, a, b, {l}]", i12),
        descent("G[a, b, {l}]", i4),
        line("else:", indent),
        descent("G[a, b, {l}] / D{l}", i4),
        line("if mirror:", indent),
        # the range check as a flag per lane (no branch in the loop: the lanes pack), the
        # return after it; a run's state then is the caller's to restore, as at an early return
        lanes("inside{l} = True", i4),
        line("for a in range(d):", i4),
        line("for b in range(d):", i8),
        lanes("""
            size{l} = abs(theta[g, a, b, {l}])
            inside{l} = inside{l} & (size{l} <= high) & ((pk <= 2.0) | (size{l} >= low))
            """, i12),
        lanes("""
            if not inside{l}:
                return g * LANES + {l}
            """, i4),
        line("if inverse_kind == 2:", i4),
        line("for a in range(d):", i8),
        line("for b in range(d):", i12),
        lanes("""
            x{l} = theta[g, a, b, {l}]
            W[g, a, b, {l}] = math.copysign(math.sqrt(abs(x{l})), x{l})
            """, i12 + 4),
        line("elif inverse_kind == 6:", i4),
        line("for a in range(d):", i8),
        line("for b in range(d):", i12),
        lanes("""
            x{l} = theta[g, a, b, {l}]
            w{l} = third_power(abs(x{l}), cbrt_lanes(abs(x{l})), inverse_whole)
            W[g, a, b, {l}] = math.copysign(w{l}, x{l})
            """, i12 + 4),
        line("else:", i4),
        line("for a in range(d):", i8),
        line("for b in range(d):", i12),
        lanes("""
            x{l} = theta[g, a, b, {l}]
            w{l} = power(abs(x{l}), inverse, inverse_kind, inverse_whole)
            W[g, a, b, {l}] = math.copysign(w{l}, x{l})
            """, i12 + 4),
    ])  # fmt: skip


def source() -> str:
    """The text of `engine.kernels_lanes`."""
    helpers = hashlib.sha256(Path(__file__).with_name("kernels_numba.py").read_bytes())
    body = forward(12) + backward(12) + divisor(12) + update(12)
    # an unordered sample (a token above its optimal one) ends the excess's logsumexp, for the
    # rest of the call, as in the per-run kernel
    ordered = lanes("ordered{l} = True", 8)
    header = HEADER.format(lanes=LANES, helpers=helpers.hexdigest(), ordered=ordered)
    return header + body + "    return -1\n"


def write() -> Path:
    """Writes `source()` to kernels_lanes.py beside this module; returns its path."""
    path = Path(__file__).with_name("kernels_lanes.py")
    path.write_text(source(), encoding="utf-8")
    return path
