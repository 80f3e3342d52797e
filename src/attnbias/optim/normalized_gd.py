"""Normalized gradient descent (docs/theory.md#algorithms; Vasudeva et al., arXiv 2402.05738,
eq. 2), with optional momentum ("NGD-mom"):

    m ← β m + g/‖g‖,    W ← W − η m     (β = 0: W ← W − η g/‖g‖).

‖g‖ is computed scale-safely, so tiny late-training gradients still give a unit step. Used on
minibatch gradients it is SNGD.
"""

from __future__ import annotations

from typing import ClassVar

from .checked import CheckedOptimizer, StepBatch, check_momentum, check_normalize
from .divisors import step_divisors
from .multi_tensor import ScratchSpace, as_runs, normalized_step_
from .sparse_rows import gather_rows, scatter_rows_


class NormalizedGD(CheckedOptimizer):
    """Args:
    params: parameters or parameter groups.
    lr: step size η > 0 (a float or a one-element tensor).
    momentum: β in [0, 1), on the normalized gradient. Default 0.
    normalize: True / "global" (the default: ‖g‖ over all tensors of the group, the paper's
        ‖∇L‖) or "per_tensor" (each tensor by its own norm); as `MirrorDescent`'s, which
        adds False. (Called `norm` before: still taken, with a DeprecationWarning.)
    weight_decay: λ ≥ 0, decoupled (as AdamW): w ← (1 − ηλ)w before each step. Default 0.
    maximize: follow +g (maximise the objective). Default False.
    foreach: None (torch._foreach_* kernels where every parameter is on a GPU), True or
        False; the results are the same bit for bit.
    differentiable: False only (see `CheckedOptimizer`).

    State: a momentum buffer per parameter where momentum > 0 (float32 for float16/bfloat16
    parameters); nothing otherwise.

    Every value is checked where it enters (TypeError for a wrong type, ValueError for a
    value out of range, naming the argument and the param group): here, in each param group,
    in add_param_group, in load_state_dict, and at each step (for what schedulers write).

    A NaN or infinite gradient raises FloatingPointError naming the parameter, with no
    parameter changed. A step moves each entry by at most η/(1 − β); where that could carry
    finite weights past the dtype's largest number (η/(1 − β) above ~1e292 in float64, 1e31
    in float32), the result is checked first and refused with FloatingPointError.

    Parameters: zero-size ones are skipped (nothing to step). float16 and bfloat16 ones are
    stepped in float32 (momentum buffers in float32) and rounded back; a result beyond their
    range raises FloatingPointError. Complex (and other non-floating) ones are refused with
    TypeError naming the parameter.
    """

    RENAMED: ClassVar[dict[str, str]] = {"norm": "normalize"}

    def __init__(
        self,
        params,
        lr,
        momentum: float = 0.0,
        normalize: bool | str = "global",
        **keywords,
    ):
        hyper = dict(lr=lr, momentum=momentum, normalize=normalize)
        super().__init__(params, self.with_keywords(hyper, keywords))

    def start_transients(self) -> None:
        self.scratch = ScratchSpace()

    @classmethod
    def check_hyper(cls, hyper: dict, where: str) -> dict:
        name = cls.__name__
        normalize = check_normalize(hyper["normalize"], f"{name}: normalize{where}")
        if normalize == "none":
            raise ValueError(
                f"{name}: normalize{where} must be True, 'global' or 'per_tensor' (normalized "
                "GD always normalizes; MirrorDescent(p=2) is plain gradient descent)"
            )
        return dict(
            momentum=check_momentum(hyper["momentum"], f"{name}: momentum{where}"),
            normalize=normalize,
        )

    def sparse(self, group: dict, shrink: float) -> bool:
        # momentum and weight decay move a row even where its gradient is zero
        return group["momentum"] == 0.0 and shrink == 1.0

    def prepare(self, batch: StepBatch) -> float:
        group = batch.group
        g = as_runs(gather_rows(batch.followed, batch.rows))
        d, factors = step_divisors(
            "NormalizedGD", g, group["normalize"], float(group["lr"]), batch.culprit
        )
        batch.parts.update(g=g, divisors=d, factors=factors)
        # |m| ≤ 1/(1 − β): a step moves an entry by at most η/(1 − β)
        return float(group["lr"]) / (1 - group["momentum"])

    def update(self, batch: StepBatch) -> None:
        group, parts, buffers = batch.group, batch.parts, None
        beta, factors = group["momentum"], parts["factors"]
        if beta != 0.0:
            buffers = as_runs(self.momentum_buffers(batch.params, batch.weights))
            factors = [None] * len(factors)
        gathered = gather_rows(batch.weights, batch.rows)
        normalized_step_(
            as_runs(gathered), parts["g"], parts["divisors"], factors, group["lr"],
            batch.foreach, self.scratch, beta, buffers,
        )  # fmt: skip
        scatter_rows_(batch.weights, batch.rows, gathered)
