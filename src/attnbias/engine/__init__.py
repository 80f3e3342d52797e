"""Batched simulation engine: many runs (seeds × hyper-parameters × algorithms) as one program."""

from ..optim.algorithm import Algorithm
from .batch import RunBatch
from .grid import log_grid, union_grid
from .simulate import Finished, simulate
from .spec import RunSpec

__all__ = ["Algorithm", "Finished", "RunBatch", "RunSpec", "log_grid", "simulate", "union_grid"]
