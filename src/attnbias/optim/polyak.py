"""Polyak step size, capped (NGD paper eq. 3; SPS_max of Loizou et al. 2021):

    η_t = min{ (L(W_t) − L*) / (c ‖∇L(W_t)‖²),  γ_b },     W ← W − η_t ∇L(W_t).

‖∇L‖ is taken over every parameter of the optimiser (the loss is one number); each group's
`lr` is its cap γ_b, so learning-rate schedulers scale the cap.
"""

from __future__ import annotations

import torch
from torch.optim import Optimizer

from ._common import check_lr, params_with_grad


class PolyakStep(Optimizer):
    """Args:
    params: parameters or parameter groups.
    lr_max: the cap γ_b > 0 on the step size (stored as the group's `lr`).
    f_star: the optimal loss L* (0 on separable / real data; the all-optimal-token loss for a
        fixed head).
    c: the constant c > 0.
    step(closure) needs the closure: it returns the loss (it may just return a loss already
    computed, with gradients already in .grad).
    """

    def __init__(self, params, lr_max: float, f_star: float = 0.0, c: float = 1.0):
        lr_max = check_lr(lr_max, "lr_max")
        check_lr(c, "c")
        super().__init__(params, dict(lr=lr_max, f_star=float(f_star), c=float(c)))

    @torch.no_grad()
    def step(self, closure=None):
        if closure is None:
            raise ValueError(
                "PolyakStep.step needs closure, a callable returning the loss; "
                "with the loss already computed use optimizer.step(lambda: loss)"
            )
        with torch.enable_grad():
            loss = closure()
        gathered = [params_with_grad(group) for group in self.param_groups]
        all_grads = [g for _, grads in gathered for g in grads]
        if not all_grads:
            return loss
        sq_norm = sum(float(n) ** 2 for n in torch._foreach_norm(all_grads, 2.0))
        for group, (params, grads) in zip(self.param_groups, gathered):
            gap = max(float(loss) - group["f_star"], 0.0)
            eta = group["lr"] if sq_norm == 0 else min(gap / (group["c"] * sq_norm), group["lr"])
            group["step_size"] = eta
            if params and eta > 0:
                torch._foreach_add_(params, grads, alpha=-eta)
        return loss
