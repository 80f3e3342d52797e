"""The compiled backend of the engine's step on the CPU (numba): many steps of a batch in one
call, between the loop's recording points (`simulate.advance_torch`).

A second implementation of the mirror-descent core's fused step (`engine.fused`), for the
batches it covers: parameter W with a fixed head, every step rule (plain, per-tensor, global,
loss, Polyak, with L − L* over the optimal tokens too; momentum; any p), the three losses,
float32 and float64, on the CPU. Everything else (K, Q; a trained head; the steepest-descent
and torch families; CUDA) steps with torch, which stays the reference. From the same start
the compiled runs stay within `RUN_RTOL` of the torch ones at every recorded step (relative
to each run's largest entry; RUN_RTOL_FLOAT32 in float32, where both round to float32 each
step: tests/test_engine_compiled.py, every rule).

A step whose dual iterate needs the log-domain redo (p > 2, `optim.functional.step_`) or is
not finite makes the call return; the stretch is then taken again by torch from the saved
state, and the batch steps with torch from there on.

Which backend: `ATTNBIAS_ENGINE_BACKEND` = "compiled" (the default: numba where installed) or
"torch" (`compiled_backend`). Without numba (`pip install 'attnbias[compiled]'`) the engine says
so once, in one line, and steps with torch. numba caches its compiled program (a few seconds to
compile) across processes.
"""

from __future__ import annotations

import functools
import logging

import numpy as np
import torch

from ..compiled_backend import backend_named, numba_module

logger = logging.getLogger(__name__)

# whole runs against the torch step from the same start, at every recorded step, relative to
# the run's largest entry (every rule of tests/test_engine_fused.MIRROR over 2,000 steps:
# 1.5e-13 measured in float64, 4.6e-6 in float32)
RUN_RTOL = 1e-9
RUN_RTOL_FLOAT32 = 1e-3
LOSS_CODES = {"logistic": 0, "exponential": 1, "correlation": 2}


@functools.cache
def kernels():
    """The numba module, or None (said once, in one line) when numba is missing or unusable."""
    return numba_module("attnbias.engine.kernels_numba", logger, "the engine steps with torch")


def covers(batch) -> bool:
    """Whether the compiled step takes this batch (see the module text)."""
    data = batch.data
    return (
        batch.stepper is None
        and batch.names == ("W",)
        and data.h is not None
        and data.X.device.type == "cpu"
        and data.X.dtype in (torch.float32, torch.float64)
        and data.loss.name in LOSS_CODES
    )


def steps_compiled(batch, backend: str | None = None) -> bool:
    """Whether `batch` steps by the compiled backend: asked for, covered and installed."""
    return backend_named(backend) == "compiled" and covers(batch) and kernels() is not None


def advance(batch, steps: int) -> bool:
    """`steps` steps of every run of `batch`, in place; False (the state then undefined: the
    caller restores it) where a dual iterate left the range the compiled step handles."""
    data, hp = batch.data, batch.hyper
    W = batch.params[0]
    mirror = batch.duals is not None
    theta = batch.duals[0] if mirror else W
    info = torch.finfo(W.dtype)

    def array(t: torch.Tensor, dtype=None) -> np.ndarray:
        return np.ascontiguousarray(t.numpy(), dtype=dtype)

    state = [W, theta, batch.buffers[0]]
    if not all(t.is_contiguous() for t in state):
        raise ValueError("the compiled step needs contiguous parameters, duals and buffers")
    yh = data.y.unsqueeze(-1) * data.h  # as the fused step forms it
    R, n = data.R, data.n
    if data.excess is None:
        opt, excess = np.zeros((R, n), np.int64), np.zeros(R, np.bool_)
    else:
        opt, excess = array(data.opt, np.int64), array(data.excess, np.bool_)
    failed = kernels().advance_numba(
        *(t.numpy() for t in state),
        array(data.X), array(data.z), array(yh), array(hp.rule, np.int64),
        *(array(x, np.float64) for x in (hp.p, hp.lr, hp.cap, hp.momentum, hp.c, hp.f_star)),
        LOSS_CODES[data.loss.name], int(steps), mirror, hp.has_momentum,
        info.tiny * info.eps, info.tiny / info.eps, info.max, opt, excess, info.tiny,
    )  # fmt: skip
    return failed < 0
