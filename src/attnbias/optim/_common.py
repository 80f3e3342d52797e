"""What the optimiser classes share: the step protocol, gathering gradients, validation, the
dual iterates of mirror descent and the check for non-finite gradients."""

from __future__ import annotations

import torch

from .._validate import check_scalar
from ..norms import mirror_map

NORMALIZE_MODES = ("per_tensor", "global")


def evaluate(closure):
    """The loss from `closure` (with gradients enabled), or None: torch.optim's step protocol."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


def params_with_grad(group: dict) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Parameters of a group that have a gradient, and those gradients (others are skipped)."""
    params, grads = [], []
    for p in group["params"]:
        if p.grad is None:
            continue
        if p.grad.is_sparse:
            raise RuntimeError("attnbias optimisers do not support sparse gradients")
        params.append(p)
        grads.append(p.grad)
    return params, grads


def groups_with_grad(optimizer):
    """(index, group, params, grads) for each parameter group that has a gradient."""
    for index, group in enumerate(optimizer.param_groups):
        params, grads = params_with_grad(group)
        if params:
            yield index, group, params, grads


def as_runs(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each tensor as a view with a leading run axis of length 1: the functional core's layout
    (in-place updates of the views write through to the tensors)."""
    return [t.unsqueeze(0) for t in tensors]


def check_lr(lr, name: str = "lr"):
    """A step size: a positive finite number or a one-element tensor."""
    return check_scalar(lr, name, low=0.0, include_low=False, allow_tensor=True)


def check_normalize(normalize) -> str:
    """False/None → "none"; True → "per_tensor"; or a mode name."""
    if normalize is None or normalize is False:
        return "none"
    if normalize is True:
        return "per_tensor"
    if normalize not in NORMALIZE_MODES:
        raise ValueError(
            f"normalize must be False, True or one of {NORMALIZE_MODES}, got {normalize!r}"
        )
    return normalize


def check_finite(optimizer: str, values: list[torch.Tensor], culprit) -> None:
    """Raise FloatingPointError if any of the values (one element each) is NaN or ±inf, with
    one host sync for all of them. `culprit` names the cause: a string, or (group index,
    params, grads) to name the first parameter whose gradient is not finite."""
    if bool(torch.isfinite(torch.stack([v.reshape(-1)[0] for v in values])).all()):
        return
    if not isinstance(culprit, str):
        index, params, grads = culprit
        bad = [k for k, g in enumerate(grads) if not bool(torch.isfinite(g).all())]
        culprit = f"the gradient norm of group {index}"
        if bad:
            shape = tuple(params[bad[0]].shape)
            culprit = f"the gradient of parameter {bad[0]} of group {index} (shape {shape})"
    raise FloatingPointError(
        f"{optimizer}: {culprit} is NaN or infinite; no parameter was changed. A diverging "
        "loss or a step size too large for the problem is the usual cause."
    )


def dual_iterates(state, params: list[torch.Tensor], p: float) -> list[torch.Tensor]:
    """The dual iterates θ = ∇ψ(w) of ℓp mirror descent, kept in `state` so that a step costs
    one map, not two (and θ keeps what w loses when it underflows).

    θ is trusted only while w is exactly what the last step wrote: `state["weight"]` holds
    that copy, and a parameter changed since by anything (in place, `.data =`,
    `load_state_dict`, a projection) gets θ = ∇ψ(w) of its new value, as plain SGD would
    honour the change."""
    duals = []
    for w in params:
        s = state[w]
        if "dual" not in s or not torch.equal(s["weight"], w):
            s["dual"] = mirror_map(w.detach(), p)
            s["weight"] = w.detach().clone()
        duals.append(s["dual"])
    return duals


def remember_weights(state, params: list[torch.Tensor]) -> None:
    """After a mirror step: the copies that `dual_iterates` compares against."""
    torch._foreach_copy_([state[w]["weight"] for w in params], params)
