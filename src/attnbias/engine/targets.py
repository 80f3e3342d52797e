"""The max-margin solutions runs are measured against; each distinct one is solved once.

Runs that share data and token choice (seeds trained by several algorithms that select the same
tokens) share their SVMs: a sweep asks for the SVMs of all its finished runs together, and only
the (data, α, norm) triples not seen before are solved, the Att-SVMs of one norm in one batch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..data import Problem
from ..metrics import Norm
from ..svm import att_svm_batch, head_svm_batch


@dataclass
class Solution:
    """One SVM's solution (None when there is none) and what to report about it: info["status"]
    is the solver's ("optimal", "optimal_inaccurate", "infeasible", "failed"), with "error" the
    reason when there is no solution."""

    value: np.ndarray | None
    info: dict = field(default_factory=dict)


def _arrays_digest(*arrays) -> str:
    h = hashlib.sha1()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _solution(result, value) -> Solution:
    """An SVM's result as stored: an unsolved one's metrics become NaN, its reason is kept."""
    if not result.solved:
        return Solution(None, {"status": result.status, "error": str(result.error)})
    info = {
        "norm": float(result.norm),
        "margin": float(result.margin),
        "status": result.status,
        "kkt_residual": float(result.kkt_residual),
    }
    return Solution(value, info)


class References:
    """A cache of Att-SVM and head-SVM solutions for one sweep."""

    def __init__(self):
        self._cache: dict[tuple, Solution] = {}
        self.solved = 0  # distinct SVMs solved (the rest were shared)

    def att(self, problems: list[Problem], alphas: list[np.ndarray], norm) -> list[Solution]:
        """W_mm of each (problem, α) for one norm."""
        return self._lookup("att", problems, alphas, norm, ("X", "z"), att_svm_batch, "W")

    def head(self, problems: list[Problem], alphas: list[np.ndarray], p: float) -> list[Solution]:
        """v_mm of each (problem, α) for the ℓp head-SVM."""
        return self._lookup("head", problems, alphas, p, ("X", "y"), head_svm_batch, "v")

    def _lookup(self, kind, problems, alphas, norm, data, solve_batch, attr) -> list[Solution]:
        """The solution of each (problem, α); those not seen before are solved in one batch,
        which reports a status per instance (an infeasible one does not stop the others)."""
        keys = [
            (
                kind,
                _arrays_digest(*(getattr(q, k) for k in data)),
                a.tobytes(),
                Norm.parse(norm).label,
            )
            for q, a in zip(problems, alphas)
        ]
        todo = {k: (q, a) for k, q, a in zip(keys, problems, alphas) if k not in self._cache}
        if todo:
            items = list(todo.values())
            arrays = [[getattr(q, k) for q, _ in items] for k in data]
            results = solve_batch(*arrays, [a for _, a in items], norm)
            self._cache.update((k, _solution(r, getattr(r, attr))) for k, r in zip(todo, results))
            self.solved += len(todo)
        return [self._cache[k] for k in keys]
