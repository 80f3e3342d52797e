"""One run the ordinary way: an `AttentionClassifier`, its `attnbias.optim` optimiser, autograd,
a Python loop. The engine must agree with it step for step; the benchmark times it."""

from __future__ import annotations

import numpy as np
import torch

from ..losses import optimal_token_excess, risk
from ..model import AttentionClassifier
from .grid import log_grid
from .spec import RunSpec


def run_reference(spec: RunSpec, grid: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Train one run; returns the iterates W (= K Qᵀ) and v recorded at `grid` (default: the
    run's own log grid) as arrays (len(grid), ...), and the grid as "steps"."""
    grid = log_grid(spec.steps, spec.grid_points) if grid is None else np.asarray(grid)
    X, z, y, _ = spec.problem.tensors()
    shape = spec.init["K"].shape if "K" in spec.init else spec.init["W"].shape
    model = AttentionClassifier(
        shape[0],
        spec.parameterization,
        query="cross",  # z is passed explicitly (for self-attention it is X[:, 0])
        train_head=spec.train_head,
        m=shape[1],
        v=torch.as_tensor(spec.init.get("v", spec.problem.v)),
    )
    with torch.no_grad():
        for name, value in spec.init.items():
            getattr(model, name).copy_(torch.as_tensor(value))
    algorithm = spec.algorithm
    optimizer = algorithm.torch_optimizer(model.parameters(), f_star=spec.f_star())
    record, at = {"W": [], "v": []}, set(grid.tolist())
    if spec.excess_over_optimal:  # Polyak's L − L* over the optimal tokens, as the engine's
        gamma = y.unsqueeze(-1) * torch.einsum("ntd,d->nt", X, model.v.detach())
        opt = torch.as_tensor(spec.optimal_tokens())
    for t in range(spec.steps + 1):
        if t in at:
            record["W"].append(model.attention_matrix().detach().clone())
            record["v"].append(model.v.detach().clone())
        if t == spec.steps:
            break
        optimizer.zero_grad()
        loss = risk(y * model(X, z), spec.loss)
        loss.backward()
        if algorithm.normalize == "loss":  # η/L: the NGD paper's loss-normalised step
            for group in optimizer.param_groups:
                group["lr"] = algorithm.lr / float(loss.detach())
        algorithm.schedule(optimizer, t)  # a decaying rate (torch's optimisers)
        if spec.excess_over_optimal:
            with torch.no_grad():
                scores = model.scores(X, z)
            optimizer.hand_excess(optimal_token_excess(scores, gamma, opt, spec.loss))
        optimizer.step(lambda loss=loss: loss)
    return {"steps": grid, **{k: torch.stack(v).numpy() for k, v in record.items()}}
