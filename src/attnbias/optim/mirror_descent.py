"""ℓp mirror descent (docs/theory.md#algorithms): p-GD of Sun et al. (2022), ℓp-AttGD of
Julistiono et al. (arXiv 2410.14581).

Potential ψ(w) = (1/p)‖w‖_p^p, mirror map ∇ψ(w) = sign(w)|w|^{p−1}, entrywise:

    ∇ψ(w⁺) = ∇ψ(w) − η g,     w⁺ = sign(θ)|θ|^{1/(p−1)},  θ the right-hand side.

With normalize, g is divided by its dual ℓq norm, q = p/(p−1), computed scale-safely.
p = 2 is exactly SGD (plain) or normalized GD (normalized). For p near 1, entries that start
at 0 (e.g. biases) move very slowly at first: w = |θ|^{1/(p−1)} is 1e-30 for θ = 1e-3, p = 1.1.
"""

from __future__ import annotations

import torch
from torch.optim import Optimizer

from .._validate import check_p
from . import functional as F
from ._common import (
    Workspace,
    as_runs,
    check_finite,
    check_lr,
    check_normalize,
    dual_iterates,
    evaluate,
    gather_rows,
    groups_with_grad,
    remember_weights,
    scatter_rows_,
    touched_rows,
)


class MirrorDescent(Optimizer):
    """ℓp mirror descent.

    Args:
        params: parameters or parameter groups.
        lr: step size η > 0 (a float or a one-element tensor).
        p: exponent of the potential, p > 1 (p = 2 is gradient descent).
        normalize: False (plain MD), True / "per_tensor" (each tensor's gradient divided by its
            own dual ℓq norm) or "global" (by the dual norm of the group's gradients together).

    A NaN or infinite gradient raises FloatingPointError when normalising (plain steps let it
    propagate into the weights, as torch.optim.SGD does). Any change to a parameter between
    steps is honoured: the dual iterate is recomputed from the changed weights.
    """

    def __init__(self, params, lr, p: float = 2.0, normalize: bool | str = False):
        lr = check_lr(lr)
        p = check_p(p, "p", minimum=1.0, strict=True)
        super().__init__(params, dict(lr=lr, p=p, normalize=check_normalize(normalize)))
        self.workspace = Workspace()

    @torch.no_grad()
    def step(self, closure=None):
        loss = evaluate(closure)
        for index, group, params, grads in groups_with_grad(self):
            p, rule = group["p"], group["normalize"]
            rows = [touched_rows(g) for g in grads]
            duals = None
            if p != 2.0:
                duals, built = dual_iterates(self.state, params, p, rows)
                # a new θ = ∇ψ(w) is not yet w's exact preimage: step every row once
                rows = [None if new else r for r, new in zip(rows, built)]
            g = as_runs(gather_rows(grads, rows))
            d = F.divisors(g, rule, p=p, scratch=self.workspace.views(g, 2))
            if d is not None:
                check_finite("MirrorDescent", d, (index, params, grads))
            w = gather_rows(params, rows)
            theta = None if duals is None else gather_rows(duals, rows)
            F.step_(
                as_runs(w),
                g,
                d,
                group["lr"],
                p=p,
                duals=None if theta is None else as_runs(theta),
                scratch=[s for (s,) in self.workspace.views(as_runs(w), 1)],
            )
            scatter_rows_(params, rows, w)
            if duals is not None:
                scatter_rows_(duals, rows, theta)
                remember_weights(self.state, params, rows)
        return loss
