"""Normalized gradient descent (NGD paper eq. 2), with optional momentum ("NGD-mom"):

    m ← β m + g/‖g‖,    W ← W − η m     (β = 0: W ← W − η g/‖g‖).

Used on minibatch gradients it is SNGD.
"""

from __future__ import annotations

import torch
from torch.optim import Optimizer

from ._common import add_scaled_, check_lr, evaluate, groups_with_grad, inverse_norm_scales


class NormalizedGD(Optimizer):
    """Args:
    params: parameters or parameter groups.
    lr: step size η > 0.
    momentum: β in [0, 1).
    norm: "global" (‖g‖ over all tensors of the group, the paper's ‖∇L‖) or "per_tensor".
    """

    def __init__(self, params, lr: float, momentum: float = 0.0, norm: str = "global"):
        lr = check_lr(lr)
        if not isinstance(momentum, (int, float)) or not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
        if norm not in ("global", "per_tensor"):
            raise ValueError(f"norm must be 'global' or 'per_tensor', got {norm!r}")
        super().__init__(params, dict(lr=lr, momentum=float(momentum), norm=norm))

    @torch.no_grad()
    def step(self, closure=None):
        loss = evaluate(closure)
        for group, params, grads in groups_with_grad(self):
            scales = inverse_norm_scales(grads, group["norm"])
            if group["momentum"] == 0:
                add_scaled_(params, grads, group["lr"], scales)
                continue
            bufs = [
                self.state[p].setdefault("momentum_buffer", torch.zeros_like(p)) for p in params
            ]
            torch._foreach_mul_(bufs, group["momentum"])
            add_scaled_(bufs, grads, -1.0, scales)  # m ← βm + g/‖g‖
            torch._foreach_add_(params, bufs, alpha=-group["lr"])
        return loss
