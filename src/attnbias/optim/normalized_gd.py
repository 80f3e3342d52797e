"""Normalized gradient descent (docs/theory.md#algorithms; Vasudeva et al., arXiv 2402.05738,
eq. 2), with optional momentum ("NGD-mom"):

    m ← β m + g/‖g‖,    W ← W − η m     (β = 0: W ← W − η g/‖g‖).

‖g‖ is computed scale-safely, so tiny late-training gradients still give a unit step. Used on
minibatch gradients it is SNGD.
"""

from __future__ import annotations

import torch
from torch.optim import Optimizer

from .._validate import check_scalar
from . import functional as F
from ._common import (
    Workspace,
    as_runs,
    check_finite,
    check_lr,
    evaluate,
    gather_rows,
    groups_with_grad,
    scatter_rows_,
    touched_rows,
)


class NormalizedGD(Optimizer):
    """Args:
    params: parameters or parameter groups.
    lr: step size η > 0 (a float or a one-element tensor).
    momentum: β in [0, 1).
    norm: "global" (‖g‖ over all tensors of the group, the paper's ‖∇L‖) or "per_tensor".

    A NaN or infinite gradient raises FloatingPointError naming the parameter.
    """

    def __init__(self, params, lr, momentum: float = 0.0, norm: str = "global"):
        lr = check_lr(lr)
        momentum = check_scalar(momentum, "momentum", low=0.0, high=1.0, include_high=False)
        if norm not in ("global", "per_tensor"):
            raise ValueError(f"norm must be 'global' or 'per_tensor', got {norm!r}")
        super().__init__(params, dict(lr=lr, momentum=momentum, norm=norm))
        self.workspace = Workspace()

    @torch.no_grad()
    def step(self, closure=None):
        loss = evaluate(closure)
        for index, group, params, grads in groups_with_grad(self):
            beta, buffers = group["momentum"], None
            # momentum moves a row even where its gradient is zero: no sparse rows then
            rows = [touched_rows(g) if beta == 0.0 else None for g in grads]
            g = as_runs(gather_rows(grads, rows))
            d = F.divisors(g, group["norm"], scratch=self.workspace.views(g, 2))
            check_finite("NormalizedGD", d, (index, params, grads))
            if beta != 0.0:
                buffers = as_runs(
                    [
                        self.state[w].setdefault("momentum_buffer", torch.zeros_like(w))
                        for w in params
                    ]
                )
            w = gather_rows(params, rows)
            F.step_(
                as_runs(w),
                g,
                d,
                group["lr"],
                momentum=beta,
                buffers=buffers,
                scratch=[s for (s,) in self.workspace.views(as_runs(w), 1)],
            )
            scatter_rows_(params, rows, w)
        return loss
