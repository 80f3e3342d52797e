"""The dual iterates θ = ∇ψ(w) that ℓp mirror descent keeps per parameter, and the check that
honours any edit of the weights between steps."""

from __future__ import annotations

import numpy as np
import torch

from ..norms import mirror_map
from .divisors import SMALL_TENSOR


def dual_iterates(
    states: list[dict], keys: list[torch.Tensor], weights: list[torch.Tensor], p: float, rows: list
) -> tuple[list[torch.Tensor], list[str | None]]:
    """The dual iterates θ = ∇ψ(w) of ℓp mirror descent, kept in `states` (the optimiser
    state of each parameter in `keys`; `weights` are the tensors stepped: the parameters, or
    their float32 working copies) so that a step costs one mirror map, not two (and θ keeps
    what w loses when it underflows); and for each "built" (from w just now: no state yet, or
    w changed shape, dtype or device), "refreshed" (some entries recomputed from edited
    weights) or None.

    θ is trusted only where w is exactly what the last step wrote: `state["weight"]` holds
    that copy (in the parameter's dtype: the values written into it; see `remember_weights`),
    and entries changed since by anything (in place, through `.data` too, which torch's
    version counter does not see; `.data =`; `load_state_dict`; a projection), NaN counting
    as changed, get θ = ∇ψ(w) of their new value, as plain SGD would honour the change; the
    others keep their θ. Where `rows[k]` is given, the step writes only those rows of
    parameter k, so only they are compared: an edit to another row stays as the user left it,
    and is found when a step first touches that row."""
    duals, status, compared = [], [], []
    # (detached only where a value is kept or read through numpy: two dozen calls a step
    # on a small model, for tensors that compare equal)
    for j, (s, key, w, r) in enumerate(zip(states, keys, weights, rows)):
        dual, copy, current = s.get("dual"), s.get("weight"), key
        if not (fits(dual, w) and fits(copy, current)):
            s["dual"], s["weight"] = mirror_map(w.detach(), p), current.detach().clone()
            status.append("built")
        else:
            if r is not None:
                copy, current = copy.index_select(0, r), current.index_select(0, r)
            compared.append((j, dual, copy, current, w, r))
            status.append(None)
        duals.append(s["dual"])
    same = same_values_each([(old, now) for _, _, old, now, _, _ in compared])
    for (j, dual, old, now, w, r), unchanged in zip(compared, same):
        if unchanged:
            continue
        w, now = w.detach(), now.detach()
        if r is None:
            refresh_edited_(dual, old != now, w, p)
        else:
            part = refresh_edited_(dual.index_select(0, r), old != now, w.index_select(0, r), p)
            dual.index_copy_(0, r, part)
        status[j] = "refreshed"
    return duals, status


def fits(saved, w: torch.Tensor) -> bool:
    """Whether `saved` (from the state, perhaps a checkpoint's) is a tensor shaped, typed and
    placed as `w`."""
    if not isinstance(saved, torch.Tensor):
        return False
    return (saved.shape, saved.dtype, saved.device) == (w.shape, w.dtype, w.device)


def refresh_edited_(dual: torch.Tensor, edited: torch.Tensor, w: torch.Tensor, p: float):
    """In place: θ ← ∇ψ(w) where `edited`, θ kept elsewhere; returns θ."""
    return dual.copy_(torch.where(edited, mirror_map(w, p), dual))


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """torch.equal(a, b) for tensors of one shape and dtype (NaN ≠ NaN, 0 = −0); numpy's
    comparison on the CPU, several times faster on large tensors (small ones: torch's, which
    costs less to call)."""
    if (
        a.device.type == "cpu"
        and b.device.type == "cpu"
        and a.dtype in NUMPY_DTYPES
        and a.numel() > SMALL_TENSOR
    ):
        return bool(np.array_equal(a.detach().numpy(), b.detach().numpy()))
    return torch.equal(a, b)


def same_values_each(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> list[bool]:
    """`same_values` of each pair, with one host synchronisation for all the pairs on a GPU
    (torch.equal would wait for each): there, "no entry differs" (NaN differs from itself)."""
    out: list = [None] * len(pairs)
    on_device = []
    for k, (a, b) in enumerate(pairs):
        if a.device.type == "cpu" and b.device.type == "cpu":
            out[k] = same_values(a, b)
        else:
            on_device.append(k)
    if on_device:
        differs = torch.stack([(pairs[k][0] != pairs[k][1]).any() for k in on_device])
        for k, d in zip(on_device, differs.tolist()):
            out[k] = not d
    return out


NUMPY_DTYPES = (torch.float16, torch.float32, torch.float64)


def remember_weights(states: list[dict], params: list[torch.Tensor], rows: list) -> None:
    """After a mirror step: the copies `dual_iterates` compares against (in each parameter's
    state), of the values the step wrote into the parameters (only the rows it wrote, where it
    wrote some of them)."""
    for s, key, r in zip(states, params, rows):
        copy, w = s["weight"], key.detach()
        copy.copy_(w) if r is None else copy.index_copy_(0, r, w.index_select(0, r))
