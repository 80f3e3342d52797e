"""Polyak step size, capped (docs/theory.md#algorithms; Vasudeva et al., arXiv 2402.05738,
eq. 3; SPS_max of Loizou et al., arXiv 2002.10542):

    η_t = min{ (L(W_t) − L*) / (c ‖∇L(W_t)‖²),  γ_b },     W ← W − η_t ∇L(W_t).

‖∇L‖ is taken over every parameter of the optimiser (the loss is one number), scale-safely;
each group's `lr` is its cap γ_b, so learning-rate schedulers scale the cap.
"""

from __future__ import annotations

import math
import numbers
from typing import ClassVar

import torch

from .._validate import check_scalar
from . import functional as F
from .checked import (
    CheckedOptimizer,
    StepBatch,
    decay_factor,
    gradients,
    use_foreach,
)
from .divisors import polyak_divisor, polyak_divisor_of_numbers, step_divisors
from .guards import check_finite, not_finite, working_copies
from .multi_tensor import as_runs, on_cpu
from .sparse_rows import gather_rows, scatter_rows_, touched_rows

# dtypes whose divisor is computed on the host on the CPU (`divisors.polyak_divisor_of_numbers`)
HOST_DTYPES = (torch.float32, torch.float64)


class PolyakStep(CheckedOptimizer):
    """Args:
    params: parameters or parameter groups.
    lr: the cap γ_b > 0 on the step size (the group's "lr", which learning-rate schedulers
        scale); math.inf: uncapped. (Called `lr_max` before: still taken, with a
        DeprecationWarning.)
    f_star: the optimal loss L*, finite (0 on separable / real data; the all-optimal-token
        loss for a fixed head). Default 0.
    c: the constant c > 0, finite. Default 1.
    weight_decay: λ ≥ 0, decoupled (as AdamW): w ← (1 − γ_b λ)w before each step, with the
        group's lr γ_b (not η_t). Default 0.
    maximize: follow +g, i.e. minimise −L: η_t = min{(−L − L*)/(c‖g‖²), γ_b}, with L* the
        optimum of −L. Default False.
    foreach: None (torch._foreach_* kernels where every parameter is on a GPU), True or
        False; the results are the same bit for bit.
    differentiable: False only (see `CheckedOptimizer`).

    State: none (the step size taken is left in each group's "step_size").

    The step is computed from the gradient autograd gives, in true scale: the divisor
    c‖g‖²/(L − L*) (`divisors.polyak_divisor`) is exact for γ_b = ∞ while it is a normal
    number; where it underflows (η_t beyond the dtype's range: a gradient that has itself
    nearly underflowed, logit gaps of ~700 in float64) the uncapped step raises
    FloatingPointError rather than take no step. The batched engine takes the same rule
    from log-scale gradients (`divisors.polyak_log_step`), with no such limit.

    L − L* computed as the difference of two losses is 0 once it falls below L*'s float
    resolution (~1e-16·L*), and the step with it. A caller that can compute the excess itself,
    scale-safely (a fixed head's `losses.optimal_token_excess`), hands it with
    hand_excess(excess) before step(): that step takes it as L − L*.

    Every value is checked where it enters (TypeError for a wrong type, ValueError for a
    value out of range, naming the argument and the param group): here, in each param group,
    in add_param_group, in load_state_dict, and at each step (for what schedulers write).

    step(closure) needs the loss: from the closure (it may just return a loss already
    computed, with gradients already in .grad), or, for training loops that call step()
    without one (the Hugging Face Trainer: real/hf.py), handed beforehand with hand_loss(loss)
    — the losses handed since the last step are summed, as the gradients of gradient
    accumulation are. A NaN or infinite loss or gradient raises FloatingPointError, with no
    parameter changed. The step size taken is left in each group's "step_size". A step that
    could carry finite weights past the dtype's largest number (η_t‖g‖ above ~1e292 in
    float64, 1e31 in float32) is checked first and refused with FloatingPointError.

    Parameters: zero-size ones are skipped (nothing to step). float16 and bfloat16 ones are
    stepped in float32 and rounded back; a result beyond their range raises
    FloatingPointError. Complex (and other non-floating) ones are refused with TypeError
    naming the parameter.
    """

    RENAMED: ClassVar[dict[str, str]] = {"lr_max": "lr"}
    LR_MAY_BE_INFINITE: ClassVar[bool] = True  # γ_b = ∞: uncapped

    def __init__(
        self,
        params,
        lr=None,
        f_star: float = 0.0,
        c: float = 1.0,
        **keywords,
    ):
        hyper = dict(lr=lr, f_star=f_star, c=c)
        super().__init__(params, self.with_keywords(hyper, keywords))
        self.handed_loss = None  # losses handed since the last step (not optimiser state)
        self.handed_excess = None  # L − L* handed for the next step (not optimiser state)

    @classmethod
    def check_hyper(cls, hyper: dict, where: str) -> dict:
        name = cls.__name__
        return dict(
            f_star=check_scalar(hyper["f_star"], f"{name}: f_star{where}"),
            c=check_scalar(hyper["c"], f"{name}: c{where}", low=0.0, include_low=False),
        )

    def common(self, key: str):
        """A value every group must share (the step uses one loss for all of them)."""
        values = {group[key] for group in self.param_groups}
        if len(values) > 1:
            raise ValueError(
                f"PolyakStep: every param group must have the same {key}, got {values}"
            )
        return values.pop()

    def hand_loss(self, loss) -> None:
        """Add `loss` (the loss whose gradient backward() put in .grad) to the loss the next
        step() without a closure uses."""
        loss = torch.as_tensor(loss).detach().double().sum()
        self.handed_loss = loss if self.handed_loss is None else self.handed_loss + loss

    def hand_excess(self, excess) -> None:
        """Hand L − L* of the next step (one real number or one-element tensor, finite),
        computed by the caller where the difference of the loss and f_star would round to 0:
        that step takes it as its gap, and no param group's f_star (nor maximize's sign)."""
        if isinstance(excess, bool) or not isinstance(excess, (numbers.Real, torch.Tensor)):
            raise TypeError(
                f"PolyakStep.hand_excess: excess must be a real number or a tensor, "
                f"got {type(excess).__name__}"
            )
        excess = torch.as_tensor(excess).detach().double()
        if excess.numel() != 1 or not bool(torch.isfinite(excess).all()):
            raise ValueError(
                f"PolyakStep.hand_excess: excess must be one finite number, got {excess}"
            )
        self.handed_excess = excess.reshape(())

    def loss_of(self, closure):
        """The loss of the step: from `closure` (recomputed with gradients enabled) or from
        `hand_loss`; ValueError with neither."""
        if closure is None and self.handed_loss is None:
            raise ValueError(
                "PolyakStep.step needs the loss: pass closure, a callable returning it "
                "(optimizer.step(lambda: loss) if already computed), or call "
                "optimizer.hand_loss(loss) before step() (the Hugging Face Trainer: use "
                "attnbias.real.hf.LossHandingTrainer)"
            )
        if closure is None:
            loss, self.handed_loss = self.handed_loss, None
            return loss
        with torch.enable_grad():
            return closure()

    def gather(self, loss):
        """One batch per group, from one step over all groups: one loss, so ‖g‖ is taken
        over every parameter and each group's η_t from it (with its own cap, c and L*)."""
        for index, group in enumerate(self.param_groups):
            self.check_group(group, index)
        gathered = [
            self.params_with_grad(group, index) for index, group in enumerate(self.param_groups)
        ]
        params = [w for ws, _ in gathered for w in ws]
        if not params:
            return
        # one loss for all groups: maximize and foreach must agree across them
        maximize = self.common("maximize")
        foreach = use_foreach(dict(foreach=self.common("foreach")), params)
        grads = gradients(dict(maximize=maximize), [g for _, gs in gathered for g in gs], foreach)
        shrinks = [decay_factor("PolyakStep", k, g) for k, g in enumerate(self.param_groups)]
        weights = working_copies(params)
        # weight decay moves every row: no sparse rows then
        sparse = all(shrink == 1.0 for shrink in shrinks)
        rows = [touched_rows(g) if sparse else None for g in grads]
        stepped = gather_rows(grads, rows)
        g = as_runs(stepped)
        excess, self.handed_excess = self.handed_excess, None
        if excess is None:
            value = torch.as_tensor(loss).detach().reshape(1).to(grads[0])
            if maximize:
                value = -value
        else:  # L − L* itself: no L* to subtract
            value = excess.reshape(1).to(grads[0])
        # on the CPU, numbers are read without a synchronisation: decided on the host
        host = on_cpu(params) and value.dtype in HOST_DTYPES
        if host and not math.isfinite(float(value)):
            raise not_finite("PolyakStep", "the loss")
        if not host:
            check_finite("PolyakStep", [value], "the loss")
        # ‖g‖ over all groups, from the quick norms (their factors are not needed: the step
        # divides by Polyak's D with η = 1, which `F.step_` takes in one pass)
        sq_root = step_divisors("PolyakStep", g, "global", 1.0, ("(all groups)", params, grads))
        sq_root = sq_root[0][0]
        start = 0
        host = host and sq_root.dtype == value.dtype
        for index, (group, (group_params, group_grads)) in enumerate(
            zip(self.param_groups, gathered)
        ):
            f_star = group["f_star"] if excess is None else 0.0
            hyper = (f_star, group["c"], float(group["lr"]))
            number = None
            if host:  # the same number as polyak_divisor's, without its dozen operator calls
                norm, loss_value = float(sq_root), float(value)
                number = polyak_divisor_of_numbers(norm, loss_value, *hyper, value.dtype)
                d = torch.tensor([number], dtype=value.dtype)
            else:
                d = polyak_divisor(sq_root, value, *hyper)
            size, norm = d.item(), sq_root.item()
            if size == 0.0 and norm > 0.0:  # γ_b = ∞ and η_t beyond the dtype's range
                raise FloatingPointError(
                    f"PolyakStep: the uncapped step size (L − L*)/(c‖g‖²) of param group "
                    f"{index} exceeds {str(value.dtype).removeprefix('torch.')}'s range "
                    f"(‖g‖ = {norm:.3g}); its parameters were not changed. A finite lr (γ_b), or "
                    "the engine's log-scale step (attnbias.engine), computes it"
                )
            group["step_size"] = math.inf if size == 0.0 else 1.0 / size
            if not group_params:
                continue
            part = slice(start, start + len(group_params))
            start = part.stop
            # |η_t g| ≤ η_t ‖g‖ (0 for a zero gradient, whatever η_t)
            bound = 0.0 if norm == 0.0 else group["step_size"] * norm
            yield StepBatch(
                index, group, group_params, group_grads, stepped[part], weights[part], foreach,
                shrinks[index], rows[part], dict(g=g[part], divisor=d, number=number, bound=bound),
            )  # fmt: skip

    def prepare(self, batch: StepBatch) -> float:
        return batch.parts["bound"]

    def update(self, batch: StepBatch) -> None:
        d, number = batch.parts["divisor"], batch.parts["number"]
        w = gather_rows(batch.weights, batch.rows)
        # η = 1: one pass (on the CPU torch loops over the tensors in C++)
        if number is not None and number != 0.0:
            # `F.step_`'s foreach addcdiv, without the run axis its (1,) D needs no view
            # for, nor its no step at D = 0
            torch._foreach_addcdiv_(w, batch.followed, [d] * len(w), value=-1.0)
        else:
            foreach = batch.foreach or on_cpu(w)
            F.step_(as_runs(w), batch.parts["g"], [d] * len(w), 1.0, foreach=foreach)
        scatter_rows_(batch.weights, batch.rows, w)
