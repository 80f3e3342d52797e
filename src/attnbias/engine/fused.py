"""The fused engine step: `kernel.Stack.scaled_gradients` and `update.step` in fewer, larger
tensor operations on buffers allocated once per batch (`StepBuffers`).

A sweep's batch is ~100 runs of 10×10 matrices, so a step's cost is the number of tensor
operations and how well each one's kernel handles tiny matrices, not arithmetic. The unfused
step (kept: `simulate(..., fused=False)`) spends most of its time in per-sample matrix-vector
products (606 of 8×10 per product) and in `pow`. Here:
- logits: one (d×d)(d×n) and one (n×d)(d×nT) product per run; the logits of sample i are the
  diagonal blocks of the second (it also forms the cross terms x_{j,t}ᵀ W z_i, j ≠ i: 6× the
  multiplications, in two BLAS calls per run instead of 600 tiny products);
- Σ_t r_{i,t} x_{i,t}: the weights r laid out block-diagonally, one (n×nT)(nT×d) product;
- the stacks of products on the CPU by numpy's matmul (`bmm`), on the tensors' own memory:
  torch's batched call costs several times the arithmetic of such small matrices;
- the largest logit and its token in one `max`; the log-scale weights' per-sample offset
  (log|ℓ'(u_i)| − log n − log Σ_t e^{a_{i,t}}) added once; y f = Σ_t s_t (y h_t) and
  −y(h − f) = y f − y h with y h formed once (exact for labels ±1);
- norms: `norms.lp_norm`'s "fused" mode (scaled by the largest entry, in the workspace's
  buffers, x^{k+1/2} as x^k·√x instead of `pow`: ℓ1.5 norms, mirror descent with p = 3), and
  no host synchronisation for batches that
  mix step rules. The step itself is `optim.functional.step_`; its range check of the dual
  iterates for p > 2 is deferred to the recording points (`simulate`) through `range_ok`.

Same maths, other rounding: from the same state a fused step is within `STEP_ULPS` of the
unfused one (its gradients within `GRADIENT_ULPS`), and whole runs of W stay within
`FUSED_RUN_RTOL` of it at every recorded step (tests/test_engine_fused.py, every rule and
parameterisation). Each run's numbers depend on the other runs of its batch no more than
`sweep.plan` reproduces (per-run products, elementwise operations and per-run reductions only).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..norms import lp_norm, per_run
from ..optim.divisors import Norms
from ..optim.functional import run_dims
from .kernel import Stack, finite_max

# From the same state as the unfused step (tests/test_engine_fused.py, every rule and
# parameterisation, float64 and float32): the parameters after a fused step agree to STEP_ULPS
# ulps of each run's largest entry (2.8 measured), the gradients to GRADIENT_ULPS of their
# largest entry (282 measured in float64, 120 in float32: their sums cancel, Σ_t r_{i,t} = 0,
# so an entry can be far below its terms);
# whole runs of W (and v) agree to FUSED_RUN_RTOL at every recorded step.
STEP_ULPS = 16
GRADIENT_ULPS = 1024
FUSED_RUN_RTOL = 1e-9
# m·k·n of the largest product `bmm` leaves to numpy on the CPU (where threads gain nothing)
SMALL_PRODUCT = 2**16


class StepBuffers:
    """The buffers of one batch's fused steps (a batch that loses runs gets a new one)."""

    def __init__(self, data: Stack, params: list[torch.Tensor]):
        R, n, T, d = data.R, data.n, data.T, data.d
        like = {"dtype": data.X.dtype, "device": data.X.device}
        self.zT = data.z.mT.contiguous()
        self.Wz = torch.empty(R, d, n, **like)  # column i: W z_i
        # row i: (W z_i)ᵀ x_{j,t} for every (j, t); the logits are the blocks j = i
        self.cross = torch.empty(R, n, n * T, **like)
        self.logits = self.cross.view(R, n, n, T).diagonal(0, 1, 2).transpose(1, 2)
        self.shifted, self.e, self.s, self.work, self.log_terms = (
            torch.empty(R, n, T, **like) for _ in range(5)
        )
        # row i holds r_{i,·} at columns i·T … i·T+T−1 and zeros elsewhere
        self.blocks = torch.zeros(R, n, n * T, **like)
        self.block_diagonal = self.blocks.view(R, n, n, T).diagonal(0, 1, 2)
        self.xr = torch.empty(R, n, d, **like)
        self.G = torch.empty(R, d, d, **like)
        self.neg_y = -data.y.unsqueeze(-1)
        self.yh = None if data.h is None else data.y.unsqueeze(-1) * data.h
        self.yh_trained = torch.empty(R, n, T, **like)
        self.g_v = torch.empty(R, d, 1, **like)
        self.v_weights = torch.empty(R, n, T, **like)
        # per parameter: the step's scratch and two buffers for its norm
        self.scratch = [torch.empty_like(w) for w in params]
        self.norm_work = [(torch.empty_like(w), torch.empty_like(w)) for w in params]


def scaled_gradients(data: Stack, ws: StepBuffers, W: torch.Tensor, v=None, risk=True):
    """`Stack.scaled_gradients`, fused: (L or None, [G̃_W, G̃_v], [m_W, m_v], log(L − L*) or
    None). The gradients live in the workspace until the next call."""
    R, n = data.R, data.n
    h = data.h if v is None else data.values(v)
    bmm(W, ws.zT, out=ws.Wz)
    bmm(ws.Wz.mT, data.XfT, out=ws.cross)
    a = ws.logits
    largest, top = torch.max(a, -1, keepdim=True)
    shifted = torch.sub(a, largest, out=ws.shifted)
    e = torch.exp(shifted, out=ws.e)
    total = e.sum(-1, keepdim=True)
    s = torch.div(e, total, out=ws.s)
    yh = ws.yh if v is None else torch.mul(data.y.unsqueeze(-1), h, out=ws.yh_trained)
    u = torch.mul(s, yh, out=ws.work).sum(-1)  # y·Σ_t s_t h_t, exactly so for y = ±1
    # log|c_i s_{i,t}| = shifted − log Σ_t e + log|ℓ'(u_i)| − log n (c_i's sign is −y_i)
    offset = data.loss.log_abs_derivative(u).sub_(math.log(n)).unsqueeze(-1).sub_(total.log_())
    log_terms = torch.add(shifted, offset, out=ws.log_terms)
    if v is not None:
        m_v = finite_max(log_terms)
        weights = torch.sub(log_terms, per_run(m_v, log_terms), out=ws.v_weights).exp_()
        weights.mul_(ws.neg_y)
    log_terms.scatter_(-1, top, -math.inf)  # the top token's term is −Σ others
    m_W = finite_max(log_terms)
    r = log_terms.sub_(per_run(m_W, log_terms)).exp_()
    r.mul_(torch.sub(u.unsqueeze(-1), yh, out=ws.work))  # −y (h − f) = y f − y h, y = ±1
    r.scatter_(-1, top, r.sum(-1, keepdim=True).neg_())
    ws.block_diagonal.copy_(r.transpose(1, 2))
    bmm(ws.blocks, data.Xf, out=ws.xr)
    grads, log_scales = [bmm(ws.xr.mT, data.z, out=ws.G)], [m_W]
    if v is not None:
        grads.append(bmm(data.XfT, weights.view(R, -1, 1), out=ws.g_v).squeeze(-1))
        log_scales.append(m_v)
    if not risk:
        return None, grads, log_scales, None
    value = data.risk(u, s, yh)
    if data.excess is None and v is None:  # a fixed head, no excess runs: no log needed
        return value, grads, log_scales, None
    # (total holds log Σ_t e by now)
    return value, grads, log_scales, data.log_risk(value, shifted - total, yh, u)


def bmm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """out ← a @ b, stacks of matrices. On the CPU, for float32/64 products of at most
    `SMALL_PRODUCT` multiplications each, by numpy's matmul on views of the same memory: on a
    sweep's tiny matrices faster than `torch.bmm`, whose batched BLAS call costs more than
    their arithmetic (benchmarks/bench_engine_step.py, `--torch-products`). Larger ones stay
    with torch and its thread setting (a sweep holds numpy's BLAS to the same, `sweep._threads`)."""
    m, k = a.shape[-2:]
    small = m * k * b.shape[-1] <= SMALL_PRODUCT
    if small and out.is_cpu and out.dtype in (torch.float32, torch.float64):
        with np.errstate(all="ignore"):  # NaN and inf pass as in torch, without warnings
            np.matmul(a.numpy(), b.numpy(), out=out.numpy())
        return out
    return torch.bmm(a, b, out=out)


def workspace_norms(ws: StepBuffers) -> Norms:
    """The norms of `update.step`'s divisors in the workspace's buffers (its `norms`, the
    fused step's: `run_norm` of each tensor)."""
    return lambda gs, q: [run_norm(g, q, work) for g, work in zip(gs, ws.norm_work)]


def run_norm(g: torch.Tensor, q, work) -> torch.Tensor:
    """‖g‖_q per run, (R,), in the workspace's buffers `work`: `norms.lp_norm`, mode "fused"."""
    return lp_norm(g, q, run_dims(g), scratch=work, mode="fused")
