"""What the optimiser classes share: the step protocol, gathering gradients, validation, the
dual iterates of mirror descent and the check for non-finite gradients."""

from __future__ import annotations

import numpy as np
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


def dual_iterates(
    state, params: list[torch.Tensor], p: float, rows: list
) -> tuple[list[torch.Tensor], list[bool]]:
    """The dual iterates θ = ∇ψ(w) of ℓp mirror descent, kept in `state` so that a step costs
    one map, not two (and θ keeps what w loses when it underflows), and for each whether it
    was built from w just now (no state yet, or w changed shape or dtype).

    θ is trusted only where w is exactly what the last step wrote: `state["weight"]` holds
    that copy, and entries changed since by anything (in place, `.data =`,
    `load_state_dict`, a projection) get θ = ∇ψ(w) of their new value, as plain SGD would
    honour the change; the other entries keep their θ. Where `rows[k]` is given, the step
    writes only those rows of parameter k, so only they are checked: an edit to another row
    stays as the user left it, and is found when a step first touches that row."""
    duals, built = [], []
    for w, r in zip(params, rows):
        s, w = state[w], w.detach()
        new = "dual" not in s or s["weight"].shape != w.shape or s["weight"].dtype != w.dtype
        if new:
            s["dual"] = mirror_map(w, p)
            s["weight"] = w.clone()
        elif r is None:
            if not same_values(s["weight"], w):
                refresh_edited_(s["dual"], s["weight"], w, p)
        else:
            dual, copy, current = (t.index_select(0, r) for t in (s["dual"], s["weight"], w))
            if not torch.equal(copy, current):
                s["dual"].index_copy_(0, r, refresh_edited_(dual, copy, current, p))
        duals.append(s["dual"])
        built.append(new)
    return duals, built


def refresh_edited_(
    dual: torch.Tensor, copy: torch.Tensor, w: torch.Tensor, p: float
) -> torch.Tensor:
    """In place: θ ← ∇ψ(w) where w differs from the copy of what the last step wrote (NaN
    counts as different), θ kept elsewhere."""
    return dual.copy_(torch.where(copy != w, mirror_map(w, p), dual))


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """torch.equal(a, b) (NaN ≠ NaN, 0 = −0); numpy's comparison on the CPU, about twice as
    fast on large tensors."""
    if a.device.type == "cpu" and b.device.type == "cpu" and a.dtype in NUMPY_DTYPES:
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and bool(np.array_equal(a.detach().numpy(), b.detach().numpy()))
        )
    return torch.equal(a, b)


NUMPY_DTYPES = (torch.float32, torch.float64)


def remember_weights(state, params: list[torch.Tensor], rows: list) -> None:
    """After a mirror step: the copies that `dual_iterates` compares against (only the rows
    the step wrote, where it wrote some of them)."""
    for w, r in zip(params, rows):
        copy = state[w]["weight"]
        copy.copy_(w) if r is None else copy.index_copy_(0, r, w.detach().index_select(0, r))


# Sparse rows. A word embedding's gradient is zero outside the few hundred rows a batch uses,
# and a zero gradient row neither adds to a norm nor moves its row (θ − η·0 = θ, and w is
# already (∇ψ)⁻¹(θ)), so the step can gather the touched rows, update them and scatter them
# back: the full step's result at a fraction of its memory traffic (except that a row edited
# by the user and not touched keeps the edit exactly, where the full step rewrites it as
# (∇ψ)⁻¹(∇ψ(w)), a few ulps away). Finding the rows needs their indices on the host, so this
# is done on the CPU only.
SPARSE_MIN_ROWS = 256  # smaller tensors are cheap enough as they are
SPARSE_MIN_SIZE = 1 << 20  # elements: the look at a sample costs < 1% of one pass over it
SPARSE_MAX_FRACTION = 0.5  # gather and scatter cost more than a full pass beyond this
SPARSE_SAMPLE = 16  # rows looked at first, so that a dense gradient costs no full scan


def touched_rows(grad: torch.Tensor) -> torch.Tensor | None:
    """Indices of the rows (first dimension) of `grad` with a nonzero or NaN entry, when the
    gradient is on the CPU and at most SPARSE_MAX_FRACTION of its rows are touched; else None
    (the whole tensor is stepped)."""
    n = grad.shape[0] if grad.dim() >= 2 else 0
    if grad.device.type != "cpu" or n < SPARSE_MIN_ROWS or grad.numel() < SPARSE_MIN_SIZE:
        return None
    rest = tuple(range(1, grad.dim()))
    sample = grad[:: max(1, n // SPARSE_SAMPLE)]
    if bool((sample != 0).any(rest).float().mean() > SPARSE_MAX_FRACTION):
        return None
    # two reductions and no temporary the size of grad; NaN ≠ 0, so a NaN row counts
    touched = (grad.amax(rest) != 0) | (grad.amin(rest) != 0)
    rows = touched.nonzero().squeeze(1)
    return rows if rows.numel() <= SPARSE_MAX_FRACTION * n else None


def gather_rows(tensors: list[torch.Tensor], rows: list) -> list[torch.Tensor]:
    """Each tensor, or a copy of its rows `rows[k]` when that is not None."""
    return [t if r is None else t.index_select(0, r) for t, r in zip(tensors, rows)]


def scatter_rows_(tensors: list[torch.Tensor], rows: list, parts: list[torch.Tensor]) -> None:
    """In place: write each gathered part back into its rows (parts that are the tensors
    themselves were updated in place already)."""
    for t, r, part in zip(tensors, rows, parts):
        if r is not None:
            t.index_copy_(0, r, part)


class Workspace:
    """Scratch memory for the temporaries of a step: one flat buffer per dtype and device,
    reused by every tensor and every step (allocating tens of MB per step costs more than the
    arithmetic on them: page faults). Not optimiser state: never saved, rebuilt on demand."""

    def __init__(self):
        self.buffers: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}

    def views(self, tensors: list[torch.Tensor], count: int) -> list[list[torch.Tensor]]:
        """For each tensor, `count` disjoint buffers shaped like it. The buffers of different
        tensors overlap: use them one tensor at a time."""
        need: dict[tuple[torch.dtype, torch.device], int] = {}
        for t in tensors:
            key = (t.dtype, t.device)
            need[key] = max(need.get(key, 0), count * t.numel())
        for (dtype, device), size in need.items():
            if (dtype, device) not in self.buffers or self.buffers[dtype, device].numel() < size:
                self.buffers[dtype, device] = torch.empty(size, dtype=dtype, device=device)
        out = []
        for t in tensors:
            buffer, n = self.buffers[(t.dtype, t.device)], t.numel()
            out.append([buffer[k * n : (k + 1) * n].view(t.shape) for k in range(count)])
        return out
