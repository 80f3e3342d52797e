"""Checks at the public boundary: every message names the argument and says how to fix it."""

from __future__ import annotations

import sys

import numpy as np
import torch

# In a module without torch (the store reads JSON with it); config imports it from here.
from .nesting import check_nesting as check_nesting

# numpy kinds as_tensor converts: bool, integers, floats, and objects (Python numbers)
REAL_KINDS = "biufO"


def as_tensor(x, name: str) -> torch.Tensor:
    """Return `x` as a floating tensor (float64 unless it already is a float tensor), finite.
    TypeError, before any conversion, for complex values (the conversion would drop their
    imaginary part) and for anything that is not numbers (records, strings, dates)."""
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise TypeError(f"{name} must hold real numbers, got a {x.dtype} tensor")
        t = x if x.is_floating_point() else x.to(torch.float64)
    else:
        a = x if isinstance(x, np.ndarray) else np.asarray(x)
        if a.dtype.kind == "c":
            raise TypeError(f"{name} must hold real numbers, got a complex array ({a.dtype})")
        if a.dtype.kind not in REAL_KINDS or a.dtype.itemsize == 0:
            # np.dtype([]) takes 0 bytes an entry: converting would allocate 8 first
            raise TypeError(f"{name} must be a numeric array, got dtype {a.dtype}")
        try:
            t = torch.as_tensor(np.asarray(a, dtype=np.float64))
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
    if a.dtype == torch.bool or a.is_complex():  # a mask read as indices 0 and 1: refused
        raise TypeError(f"{name} must hold integer token indices, got dtype {a.dtype}")
    if a.is_floating_point():
        if not torch.all(a == a.round()):
            raise ValueError(f"{name} must hold integer token indices, got non-integers")
    if tuple(a.shape) != (n,):
        raise ValueError(
            f"{name} must have shape (n,) = ({n},): one token index per sample; "
            f"got {tuple(a.shape)}"
        )
    # the range is checked in the input's own dtype: casting first would wrap 2**64 - 1 to -1
    values = a.detach().cpu().numpy()  # numpy: torch has no min/max for uint64
    low, high = (values.min().item(), values.max().item()) if n else (0, 0)
    if low < 0 or high >= T:
        raise ValueError(f"{name} must hold indices in [0, T) = [0, {T}), got {low}..{high}")
    return a.long()


def check_scalar(
    x,
    name: str,
    kind: type = float,
    *,
    low: float | None = None,
    high: float | None = None,
    include_low: bool = True,
    include_high: bool = True,
    allow_inf: bool = False,
    allow_tensor: bool = False,
):
    """A number checked as scikit-learn's check_scalar does: TypeError for a wrong type (bool is
    not a number; a string is not either), ValueError for NaN, ±inf (unless allowed) or a value
    outside [low, high] (open ends where include_* is False). Returns a float or int (or, if
    allowed, a 0-d tensor as it is)."""
    if allow_tensor and isinstance(x, torch.Tensor):
        if x.numel() != 1 or x.is_complex() or x.dtype == torch.bool:
            raise TypeError(f"{name} must be a real number or a one-element tensor, got {x!r}")
        value = float(x.detach().reshape(()).item())
    else:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be {_kind_name(kind)}, got {type(x).__name__} {x!r}")
        if isinstance(x, (int, np.integer)):
            value = int(x)  # exact, whatever its size: float() of 10**400 is an OverflowError
            if kind is not int and abs(value) > sys.float_info.max:
                raise ValueError(f"{name} must be finite, got {_shown(value)}")
            x = value if kind is int else float(value)
        else:
            value = float(x)
            if kind is int and not value.is_integer():
                raise TypeError(f"{name} must be an integer, got {x!r}")
            x = int(value) if kind is int else value
    if isinstance(value, float) and (np.isnan(value) or (np.isinf(value) and not allow_inf)):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (value == low and not include_low)):
        rule = f"{'>=' if include_low else '>'} {low:g}"
        raise ValueError(f"{name} must be {rule}, got {_shown(value)}")
    if high is not None and (value > high or (value == high and not include_high)):
        rule = f"{'<=' if include_high else '<'} {high:g}"
        raise ValueError(f"{name} must be {rule}, got {_shown(value)}")
    return x


def _shown(value: float | int) -> str:
    """A number for a one-line message: an int of any size as a float would print it."""
    if isinstance(value, int) and abs(value) > sys.float_info.max:
        return f"{'a negative' if value < 0 else 'an'} integer of {len(str(abs(value)))} digits"
    return f"{float(value):g}"


def _kind_name(kind: type) -> str:
    return "an integer" if kind is int else "a real number"


def check_choice(x, name: str, choices: tuple[str, ...]) -> str:
    """One of a few option names: TypeError for anything but a string, ValueError for another
    string."""
    if not isinstance(x, str):
        raise TypeError(f"{name} must be one of {choices}, got {type(x).__name__} {x!r}")
    if x not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {x!r}")
    return x


def check_p(p, name: str = "p", minimum: float = 1.0, strict: bool = False) -> float:
    """An ℓp exponent: a finite number >= minimum (> minimum when strict)."""
    return check_scalar(p, name, low=minimum, include_low=not strict)


def check_positive(x, name: str, allow_zero: bool = False) -> float:
    """A finite number > 0 (>= 0 with allow_zero)."""
    return check_scalar(x, name, low=0.0, include_low=allow_zero)
