"""Where Polyak's cap γ_b binds, from stored runs: the uncapped step (L − L*)/(c‖∇L‖²) is
above γ_b once L is small enough. The gradient is not recorded along a run; its ratio
‖∇L‖/L at the final iterate (stored) is, on the logistic loss's exponential tail, nearly
constant, so together with the recorded loss it places the step from which the cap binds
(`judging.verdicts.ngd.cap_onsets`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from ..model import risk_and_gradients


def final_gradient_ratios(report, problem_of: Callable[[int], object], loss: str) -> dict:
    """(c, seed) → ‖∇L‖/L at the final iterate of each stored Polyak run (W and v trained; NaN
    where L underflowed to 0); `problem_of(seed)`: the seed's problem (its tensors())."""
    out: dict[tuple[float, int], float] = {}
    for record in report.records:
        algorithm = record.config["algorithm"]
        if algorithm.get("optimizer") != "polyak" or "final_W" not in record.arrays:
            continue
        seed = int(record.config["data"]["seed"])
        X, z, y, _ = problem_of(seed).tensors()
        W = torch.as_tensor(record.arrays["final_W"], dtype=X.dtype)
        v = torch.as_tensor(record.arrays["final_v"], dtype=X.dtype)
        L, grad_W, grad_v = risk_and_gradients(W, v, X, z, y, loss)
        norm = math.sqrt(float((grad_W**2).sum() + (grad_v**2).sum()))
        L = float(L)
        out[(float(algorithm["c"]), seed)] = norm / L if L > 0 else math.nan
    return out


def ratio_lookup(ratios: dict) -> Callable[[float, np.ndarray], np.ndarray]:
    """A function (c, seeds) → the stored ratio of each seed's run at that c (NaN if none)."""

    def lookup(c: float, seeds: np.ndarray) -> np.ndarray:
        near = [k for k in ratios if math.isclose(k[0], c, rel_tol=1e-9)]
        by_seed = {s: ratios[k] for k in near for s in [k[1]]}
        return np.array([by_seed.get(int(s), math.nan) for s in seeds], dtype=np.float64)

    return lookup
