"""Polyak step size, capped (docs/theory.md#algorithms; Vasudeva et al., arXiv 2402.05738,
eq. 3; SPS_max of Loizou et al., arXiv 2002.10542):

    η_t = min{ (L(W_t) − L*) / (c ‖∇L(W_t)‖²),  γ_b },     W ← W − η_t ∇L(W_t).

‖∇L‖ is taken over every parameter of the optimiser (the loss is one number), scale-safely;
each group's `lr` is its cap γ_b, so learning-rate schedulers scale the cap.
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
    gather_rows,
    params_with_grad,
    scatter_rows_,
    touched_rows,
)


class PolyakStep(Optimizer):
    """Args:
    params: parameters or parameter groups.
    lr_max: the cap γ_b > 0 on the step size (stored as the group's `lr`).
    f_star: the optimal loss L*, finite (0 on separable / real data; the all-optimal-token
        loss for a fixed head).
    c: the constant c > 0.

    step(closure) needs the loss: from the closure (it may just return a loss already
    computed, with gradients already in .grad), or, for training loops that call step()
    without one (the Hugging Face Trainer: real/hf.py), handed beforehand with hand_loss(loss)
    — the losses handed since the last step are summed, as the gradients of gradient
    accumulation are. A NaN or infinite loss or gradient raises FloatingPointError. The step
    size taken is left in each group's "step_size".
    """

    def __init__(self, params, lr_max, f_star: float = 0.0, c: float = 1.0):
        lr_max = check_lr(lr_max, "lr_max")
        f_star = check_scalar(f_star, "f_star")
        c = check_scalar(c, "c", low=0.0, include_low=False)
        super().__init__(params, dict(lr=lr_max, f_star=f_star, c=c))
        self.workspace = Workspace()
        self.handed_loss = None  # losses handed since the last step (not optimiser state)

    def hand_loss(self, loss) -> None:
        """Add `loss` (the loss whose gradient backward() put in .grad) to the loss the next
        step() without a closure uses."""
        loss = torch.as_tensor(loss).detach().double().sum()
        self.handed_loss = loss if self.handed_loss is None else self.handed_loss + loss

    @torch.no_grad()
    def step(self, closure=None):
        if closure is None and self.handed_loss is None:
            raise ValueError(
                "PolyakStep.step needs the loss: pass closure, a callable returning it "
                "(optimizer.step(lambda: loss) if already computed), or call "
                "optimizer.hand_loss(loss) before step() (the Hugging Face Trainer: use "
                "attnbias.real.hf.LossHandingTrainer)"
            )
        if closure is None:
            loss, self.handed_loss = self.handed_loss, None
        else:
            with torch.enable_grad():
                loss = closure()
        gathered = [params_with_grad(group) for group in self.param_groups]
        params = [w for ws, _ in gathered for w in ws]
        grads = [g for _, gs in gathered for g in gs]
        if not grads:
            return loss
        rows = [touched_rows(g) for g in grads]
        g = as_runs(gather_rows(grads, rows))
        value = torch.as_tensor(loss).detach().reshape(1).to(grads[0])
        norms = F.gradient_norms(g, 2.0, self.workspace.views(g, 2))
        sq_root = F.global_norm(norms, 2.0)
        check_finite("PolyakStep", [value], "the loss")
        check_finite("PolyakStep", [sq_root], ("(all groups)", params, grads))
        start = 0
        for group, (group_params, _) in zip(self.param_groups, gathered):
            d = F.polyak_divisor(sq_root, value, group["f_star"], group["c"], group["lr"])
            group["step_size"] = 1.0 / d.item()
            if group_params:
                part = slice(start, start + len(group_params))
                w = gather_rows(group_params, rows[part])
                scratch = [b for (b,) in self.workspace.views(as_runs(w), 1)]
                F.step_(as_runs(w), g[part], [d] * len(w), 1.0, scratch=scratch)
                scatter_rows_(group_params, rows[part], w)
                start = part.stop
        return loss
