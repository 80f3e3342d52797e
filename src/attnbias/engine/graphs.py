"""A batch's step as one CUDA graph: captured once, then replayed between recording points.

On a GPU a step of a sweep's batch is a few dozen tiny kernels, each far shorter than its
launch from Python; a graph replays all of them with one launch. The replay runs the very
kernels of the captured step on the very buffers (the batch's parameters, dual iterates,
momentum, workspace and range flag, all updated in place), so its steps are the eager steps
bit for bit (tests/test_engine_fused.py, on CUDA). A step that cannot be captured (one that
synchronises with the host, say) is taken eagerly from then on, with one notice in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

logger = logging.getLogger(__name__)

WARMUP_STEPS = 3  # on a side stream before capture, as torch.cuda.graphs asks


def capture(step: Callable[[], None], state: list[torch.Tensor]) -> Callable[[], None] | None:
    """A replay of `step` (which changes only `state` and scratch), or None where it cannot
    be captured. The warm-up steps that capture needs change `state`: it is restored."""
    saved = [x.clone() for x in state]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                step()
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(graph):
            step()
    except RuntimeError as err:  # e.g. a host synchronisation inside the step
        torch.cuda.synchronize()
        logger.warning("the engine's step could not be captured as a CUDA graph (%s): "
                       "stepping eagerly", str(err).splitlines()[0])  # fmt: skip
        graph = None
    for x, y in zip(state, saved):
        x.copy_(y)
    return None if graph is None else graph.replay
