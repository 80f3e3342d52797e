"""Pieces shared by the optimisers: gathering gradients and normalising them."""

from __future__ import annotations

import torch

NORMALIZE_MODES = ("per_tensor", "global")


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


def evaluate(closure):
    """The loss from `closure` (with gradients enabled), or None: torch.optim's step protocol."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


def groups_with_grad(optimizer):
    """(group, params, grads) for each parameter group that has at least one gradient."""
    for group in optimizer.param_groups:
        params, grads = params_with_grad(group)
        if params:
            yield group, params, grads


def check_lr(lr: float, name: str = "lr") -> float:
    if not isinstance(lr, (int, float)) or not lr > 0:
        raise ValueError(f"{name} must be a positive number, got {lr!r}")
    return float(lr)


def check_normalize(normalize) -> str | None:
    """False/None → no normalisation; True → "per_tensor"; or a mode name."""
    if normalize is None or normalize is False:
        return None
    if normalize is True:
        return "per_tensor"
    if normalize not in NORMALIZE_MODES:
        raise ValueError(
            f"normalize must be False, True or one of {NORMALIZE_MODES}, got {normalize!r}"
        )
    return normalize


def dual_exponent(p: float) -> float:
    """q with 1/p + 1/q = 1."""
    return p / (p - 1.0)


def tensor_norms(tensors: list[torch.Tensor], q: float) -> list[float]:
    """ℓq norm of each tensor (entrywise)."""
    return [float(n) for n in torch._foreach_norm(tensors, q)]


def inverse_norm_scales(grads: list[torch.Tensor], mode: str, q: float = 2.0) -> list[float]:
    """Factors that divide each gradient by its ℓq norm ("per_tensor") or by the ℓq norm of all
    of them together ("global"). A zero norm gives factor 0: a zero gradient stays zero."""
    norms = tensor_norms(grads, q)
    if mode == "global":
        total = sum(n**q for n in norms) ** (1.0 / q)
        norms = [total] * len(grads)
    return [1.0 / n if n > 0 else 0.0 for n in norms]


def add_scaled_(
    targets: list[torch.Tensor],
    grads: list[torch.Tensor],
    lr: float,
    scales: list[float] | None = None,
) -> None:
    """In place: t ← t − lr·s·g for each tensor (s = 1 without scales), in one pass per tensor
    (a per-tensor loop beats scaling a copy of every gradient first)."""
    if scales is None:
        torch._foreach_add_(targets, grads, alpha=-lr)
        return
    for t, g, s in zip(targets, grads, scales):
        if s != 0.0:
            t.add_(g, alpha=-lr * s)
