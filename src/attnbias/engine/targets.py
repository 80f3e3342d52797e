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
from ..svm import InfeasibleSVMError, att_svm, att_svm_batch, head_svm


def norm_label(norm) -> str:
    """How a norm is named in metrics and files: "2", "1.75", "nuc"."""
    if norm in ("fro", "nuc"):
        return "2" if norm == "fro" else "nuc"
    return f"{float(norm):g}"


def is_lp(norm) -> bool:
    return norm != "nuc"


@dataclass
class Solution:
    """One SVM's solution (None when it could not be solved) and what to report about it."""

    value: np.ndarray | None
    info: dict = field(default_factory=dict)


def _digest(*arrays) -> str:
    h = hashlib.sha1()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _info(result) -> dict:
    return {
        "norm": float(result.norm),
        "margin": float(result.margin),
        "status": str(result.status),
        "kkt_residual": float(result.kkt_residual),
    }


class References:
    """A cache of Att-SVM and head-SVM solutions for one sweep."""

    def __init__(self):
        self._cache: dict[tuple, Solution] = {}
        self.solved = 0  # distinct SVMs solved (the rest were shared)

    def att(self, problems: list[Problem], alphas: list[np.ndarray], norm) -> list[Solution]:
        """W_mm of each (problem, α) for one norm."""
        keys = [
            ("att", _digest(p.X, p.z), a.tobytes(), norm_label(norm))
            for p, a in zip(problems, alphas)
        ]
        todo = {k: (p, a) for k, p, a in zip(keys, problems, alphas) if k not in self._cache}
        if todo:
            items = list(todo.values())
            try:
                results = att_svm_batch(
                    [p.X for p, _ in items], [p.z for p, _ in items], [a for _, a in items], norm
                )
                solutions = [Solution(r.W, _info(r)) for r in results]
            except ValueError:  # e.g. one infeasible: solve one by one to find which
                solutions = [
                    self._one(lambda p=p, a=a: att_svm(p.X, p.z, a, norm), "W") for p, a in items
                ]
            self._cache.update(zip(todo, solutions))
            self.solved += len(todo)
        return [self._cache[k] for k in keys]

    def head(self, problems: list[Problem], alphas: list[np.ndarray], p: float) -> list[Solution]:
        """v_mm of each (problem, α) for the ℓp head-SVM."""
        keys = [
            ("head", _digest(q.X, q.y), a.tobytes(), norm_label(p))
            for q, a in zip(problems, alphas)
        ]
        for k, q, a in zip(keys, problems, alphas):
            if k not in self._cache:
                self._cache[k] = self._one(lambda q=q, a=a: head_svm(q.X, q.y, a, p), "v")
                self.solved += 1
        return [self._cache[k] for k in keys]

    @staticmethod
    def _one(solve, attr: str) -> Solution:
        """One SVM; an infeasible one is recorded (its metrics become NaN), not raised."""
        try:
            result = solve()
        except InfeasibleSVMError as err:
            return Solution(None, {"status": "infeasible", "error": str(err)})
        return Solution(getattr(result, attr), _info(result))
