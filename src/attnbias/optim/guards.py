"""What keeps a step safe: float32 working copies of half-precision parameters, the guard
against a step that could leave the dtype's range, the write-back that refuses such a result,
and the checks for NaN or infinite gradients (FloatingPointError naming the parameter)."""

from __future__ import annotations

import functools
import math

import torch

from .multi_tensor import large_on_cpu

# Parameter dtypes the optimisers step; float16/bfloat16 ones are stepped in float32.
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


LOW_PRECISION = (torch.float16, torch.bfloat16)


def working_copies(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each tensor, or a float32 copy of a float16/bfloat16 one: steps compute in float32,
    and `write_back` rounds the result into the parameter."""
    return [t.float() if t.dtype in LOW_PRECISION else t for t in tensors]


def may_overflow(step: float, dtype: torch.dtype) -> bool:
    """Whether adding to finite weights of `dtype` a step of at most `step` in absolute value
    can round past the largest number: only if it reaches half the spacing of the numbers
    there (about 1e292 in float64, 1e31 in float32, 16 in float16). True for NaN."""
    return not step < half_top_spacing(dtype)


@functools.cache
def half_top_spacing(dtype: torch.dtype) -> float:
    info = torch.finfo(dtype)
    return info.max * info.eps / 4


def guarded(params, weights, step) -> list[torch.Tensor]:
    """The working copies, with a copy of each parameter whose step (at most `step`, a float
    for all or one per tensor) may overflow, so that `write_back` can refuse the result
    before anything is written."""
    steps = step if isinstance(step, list) else [step] * len(params)
    return [
        x.clone() if x is w and may_overflow(s, w.dtype) else x
        for w, x, s in zip(params, weights, steps)
    ]


def write_back(optimizer: str, index: int, params, weights) -> None:
    """Write the results computed on copies (float32 ones of float16/bfloat16 parameters,
    `guarded` ones) into their parameters, rounded: all of them or, where a result is not
    finite while its parameter was, none (FloatingPointError). The copies then hold the
    values written."""
    pairs = [(k, w, x) for k, (w, x) in enumerate(zip(params, weights)) if x is not w]
    rounded = [x.to(w.dtype) for _, w, x in pairs]
    for (k, w, _), r in zip(pairs, rounded):
        if not bool(torch.isfinite(r).all()) and bool(torch.isfinite(w).all()):
            raise FloatingPointError(
                f"{optimizer}: the step of parameter {k} of group {index} (shape "
                f"{tuple(w.shape)}) leaves {str(w.dtype).removeprefix('torch.')}'s range "
                f"(largest {torch.finfo(w.dtype).max:g}); no parameter was changed. A smaller "
                "lr, or a wider dtype, keeps it in range."
            )
    for (_, w, x), r in zip(pairs, rounded):
        w.copy_(r)
        if r is not x:
            x.copy_(r)


def check_finite(optimizer: str, values: list[torch.Tensor], culprit) -> None:
    """Raise FloatingPointError if any of the values (one element each) is NaN or ±inf, with
    one host sync for all of them. `culprit` names the cause: a string, or (group index,
    params, grads) to name the first parameter whose gradient is not finite."""
    if not all(v.dim() == 0 for v in values):  # (0-d ones stack as they are)
        values = [v.reshape(-1)[0] for v in values]
    if not bool(torch.isfinite(torch.stack(values)).all()):
        raise not_finite(optimizer, culprit)


def not_finite(optimizer: str, culprit) -> FloatingPointError:
    """The error for a NaN or infinite gradient or loss (`culprit` as in check_finite)."""
    if not isinstance(culprit, str):
        index, params, grads = culprit
        bad = [k for k, g in enumerate(grads) if not bool(torch.isfinite(g).all())]
        culprit = f"the gradient norm of group {index}"
        if bad:
            shape = tuple(params[bad[0]].shape)
            culprit = f"the gradient of parameter {bad[0]} of group {index} (shape {shape})"
    return FloatingPointError(
        f"{optimizer}: {culprit} is NaN or infinite; no parameter was changed. A diverging "
        "loss or a step size too large for the problem is the usual cause."
    )


def largest_magnitudes(optimizer: str, tensors: list[torch.Tensor], culprit) -> list[float]:
    """max|x| of each tensor (0 for an empty one), with one host sync for all
    (`largest_entries`). FloatingPointError (as `check_finite` raises) where a tensor is not
    finite."""
    present = [t for t in tensors if t.numel()]
    tops = iter(torch.stack(largest_entries(present)).tolist() if present else ())
    sizes = [next(tops) if t.numel() else 0.0 for t in tensors]
    if not all(math.isfinite(size) for size in sizes):
        raise not_finite(optimizer, culprit)
    return sizes


def largest_entries(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """max|x| of each (non-empty) tensor, 0-d each, NaN where it holds one: for a small group
    (not `multi_tensor.large_on_cpu`) or on a GPU, two multi-tensor calls where torch has
    torch._foreach_max (on the CPU a quarter of the time of their ℓ∞ norms, which torch takes
    slowly there); else one pass over each tensor, torch.aminmax, without the temporary |x|
    (on MiniLM's 22.7 M entries, fresh memory each step: most of the cost)."""
    if hasattr(torch, "_foreach_max") and not large_on_cpu(tensors):
        return list(torch._foreach_max(torch._foreach_abs(tensors)))
    return [torch.maximum(high, low.neg()) for low, high in map(torch.aminmax, tensors)]
