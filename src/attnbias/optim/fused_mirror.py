"""ℓp mirror descent's plain step of one large CPU tensor in one pass (numba), where torch
takes eight: θ − η·g, the power |θ|^{1/(p−1)} by squarings, its sign and the copy of w the
classes keep each read and write the whole tensor, so a step on MiniLM's 11 M dense entries
moved them about sixteen times against SGD's three.

The compiled step (`kernels_mirror`) is torch's arithmetic operation for operation, so its
results are torch's bit for bit (tests/test_fused_mirror.py compares every entry, float32 and
float64, with and without a divisor, with NaN and infinite gradients). It takes a step when:
the tensors are on the CPU, contiguous, of one dtype (float32 or float64) and at least
`MIN_ENTRIES` long; torch steps with one thread (with more, its operators share a tensor
between threads, and the kernel has one); p < 2 is a number whose exponent 1/(p − 1) torch
takes as a whole number (`norms.whole_exponent`: p = 1.1 in float32, 1.5, 1.25, …); η is a
number; no momentum; no divisor, or a one-element divisor with η = 1 (`functional.step_`'s one
pass). Everything else,
and every step where numba is missing or `ATTNBIAS_ENGINE_BACKEND=torch`
(`compiled_backend`), is torch's.
"""

from __future__ import annotations

import functools
import logging

import numpy as np
import torch

from ..compiled_backend import backend_named, numba_module
from ..norms import squaring_steps, whole_exponent

logger = logging.getLogger(__name__)

MIN_ENTRIES = 1 << 16  # below this, torch's few calls cost less than a numba call's setup
DTYPES = (torch.float32, torch.float64)


@functools.cache
def kernels():
    """The numba module, or None (said once, in one line) when numba is missing or unusable."""
    return numba_module(
        "attnbias.optim.kernels_mirror", logger, "mirror descent's large CPU steps use torch"
    )


@functools.cache
def powers(p: float, dtype: torch.dtype) -> tuple[bool, int, np.ndarray] | None:
    """How `norms.inverse_mirror_map` raises |θ| for this p and dtype, where it squares:
    (even, k, steps): y = θ² (even) or |θ|, then y^k by `steps` after the first square;
    None where it calls pow."""
    whole = whole_exponent(1.0 / (p - 1.0), dtype)
    if whole is None:
        return None
    even = whole % 2 == 0
    k = whole // 2 if even else whole
    codes = [0 if op == "square" else 1 for op in squaring_steps(k)[1:]] if k > 1 else []
    return even, k, np.array(codes, dtype=np.int64)


def step_(
    w: torch.Tensor,
    g: torch.Tensor,
    theta: torch.Tensor,
    copy: torch.Tensor | None,
    divisor: torch.Tensor | None,
    lr,
    p,
) -> bool:
    """`functional.step_`'s mirror step of one tensor without momentum, compiled where it is
    covered (module text): θ ← θ − η·g (or θ − g/D with η = 1), w = (∇ψ)⁻¹(θ), copy ← w.
    Returns whether it took the step (False: nothing was touched; torch takes it)."""
    if isinstance(lr, torch.Tensor) or isinstance(p, torch.Tensor) or not p < 2.0:
        return False
    if torch.get_num_threads() != 1:
        return False
    tensors = [w, g, theta] + ([] if copy is None else [copy])
    if not _covered(tensors) or (divisor is not None and not _one_pass(divisor, lr, w)):
        return False
    plan = powers(float(p), w.dtype)
    if plan is None or backend_named() != "compiled" or kernels() is None:
        return False
    scalar = np.float32 if w.dtype == torch.float32 else np.float64
    arrays = [t.detach().view(-1).numpy() for t in (theta, g, w, copy if copy is not None else w)]
    d = scalar(1.0 if divisor is None else divisor.item())
    kernels().mirror_step(*arrays, scalar(-lr), d, divisor is not None, *plan)
    return True


def _covered(tensors: list[torch.Tensor]) -> bool:
    """One dtype of DTYPES, on the CPU, contiguous, of one size ≥ MIN_ENTRIES, and no two
    sharing memory (the kernel reads and writes them entry by entry)."""
    first = tensors[0]
    if first.numel() < MIN_ENTRIES or first.dtype not in DTYPES:
        return False
    if not all(
        t.device.type == "cpu" and t.dtype == first.dtype and t.is_contiguous()
        and t.numel() == first.numel()
        for t in tensors
    ):  # fmt: skip
        return False
    return len({t.untyped_storage().data_ptr() for t in tensors}) == len(tensors)


def _one_pass(divisor: torch.Tensor, lr, w: torch.Tensor) -> bool:
    """A divisor the one pass takes: one element of w's dtype on the CPU, with η = 1."""
    return (
        lr == 1.0 and divisor.numel() == 1 and divisor.dtype == w.dtype
        and divisor.device.type == "cpu"
    )  # fmt: skip
