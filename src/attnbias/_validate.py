"""Checks at the public boundary: every message names the argument and says how to fix it."""

from __future__ import annotations

import numpy as np
import torch


def as_tensor(x, name: str) -> torch.Tensor:
    """Return `x` as a floating tensor (float64 unless it already is a float tensor), finite."""
    if isinstance(x, torch.Tensor):
        t = x if x.is_floating_point() else x.to(torch.float64)
    else:
        try:
            t = torch.as_tensor(np.asarray(x, dtype=np.float64))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be a numeric array, got {type(x).__name__}") from err
    if t.is_floating_point() and not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf; clean the input before calling")
    return t


def check_ndim(t: torch.Tensor, name: str, ndim: int, layout: str) -> None:
    if t.dim() != ndim:
        raise ValueError(f"{name} must have shape {layout}, got {tuple(t.shape)}")


def check_sequences(X, z=None, y=None, v=None, W=None):
    """Validate the batched problem arrays X (n,T,d), z (n,d), y (n,), v (d,), W (d,d).

    Returns the tensors (float64 where the input was numpy) in the same order, None kept as None.
    """
    X = as_tensor(X, "X")
    check_ndim(X, "X", 3, "(n, T, d)")
    n, T, d = X.shape
    if n < 1 or T < 1 or d < 1:
        raise ValueError(f"X must have n, T, d >= 1, got shape {tuple(X.shape)}")
    out = [X]
    if z is not None:
        z = as_tensor(z, "z")
        if tuple(z.shape) != (n, d):
            raise ValueError(
                f"z must have shape (n, d) = ({n}, {d}) to match X, got {tuple(z.shape)}"
            )
    out.append(z)
    if y is not None:
        y = as_tensor(y, "y")
        if tuple(y.shape) != (n,):
            raise ValueError(f"y must have shape (n,) = ({n},) to match X, got {tuple(y.shape)}")
        if not torch.all((y == 1) | (y == -1)):
            bad = torch.unique(y[(y != 1) & (y != -1)])[:5].tolist()
            raise ValueError(f"y must hold labels -1 or +1, found {bad}; map your classes to ±1")
    out.append(y)
    if v is not None:
        v = as_tensor(v, "v")
        if tuple(v.shape) != (d,):
            raise ValueError(f"v must have shape (d,) = ({d},) to match X, got {tuple(v.shape)}")
    out.append(v)
    if W is not None:
        W = as_tensor(W, "W")
        if tuple(W.shape[-2:]) != (d, d):
            raise ValueError(
                f"W must have shape (d, d) = ({d}, {d}) to match X, got {tuple(W.shape)}"
            )
    out.append(W)
    return tuple(out)


def check_tokens(alpha, n: int, T: int, name: str = "alpha") -> torch.Tensor:
    """Token choice: one integer index in [0, T) per sample."""
    a = torch.as_tensor(np.asarray(alpha) if not isinstance(alpha, torch.Tensor) else alpha)
    if a.is_floating_point() or a.is_complex():
        if not torch.all(a == a.round()):
            raise ValueError(f"{name} must hold integer token indices, got non-integers")
    a = a.long()
    if tuple(a.shape) != (n,):
        raise ValueError(
            f"{name} must have shape (n,) = ({n},): one token index per sample; "
            f"got {tuple(a.shape)}"
        )
    if torch.any((a < 0) | (a >= T)):
        raise ValueError(
            f"{name} must hold indices in [0, T) = [0, {T}), got {a.min().item()}..{a.max().item()}"
        )
    return a


def check_p(p: float, name: str = "p", minimum: float = 1.0, strict: bool = False) -> float:
    """An ℓp exponent: p >= minimum (or > minimum when strict)."""
    try:
        p = float(p)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number, got {p!r}") from err
    if not np.isfinite(p) or p < minimum or (strict and p == minimum):
        rel = ">" if strict else ">="
        raise ValueError(f"{name} must be finite and {rel} {minimum}, got {p}")
    return p


def check_positive(x: float, name: str, allow_zero: bool = False) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number, got {x!r}") from err
    if not np.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        rel = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {rel}, got {x}")
    return x
