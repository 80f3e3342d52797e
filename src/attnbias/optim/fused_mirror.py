"""ℓp mirror descent's plain step of one large CPU tensor in one pass (numba), where torch
takes eight: θ − η·g, the power |θ|^{1/(p−1)} by squarings, its sign and the copy of w the
classes keep each read and write the whole tensor, so a step on MiniLM's 11 M dense entries
moved them about sixteen times against SGD's three.

The compiled step (`kernels_mirror`) is torch's arithmetic operation for operation as torch's
AVX2 CPU kernels round it (θ + (−η)·g as one fused multiply-add), so its results are torch's
bit for bit (tests/test_fused_mirror.py compares every entry's bits, float32 and float64, with
and without a divisor, special values included); one exception: where two operands of an entry
are NaN (θ and g, a NaN gradient the classes refuse before stepping), the entry is NaN in both
but its sign and payload may differ. It takes a step when: torch's CPU kernels are its AVX2
ones (`torch.backends.cpu.get_cpu_capability()`; its default kernels round η·g before adding
it); the tensors are on the CPU, contiguous, of one dtype (float32 or float64) and one shape,
at least `MIN_ENTRIES` long, in memory no two of them share, neither negative nor conjugate
views, and none a tensor autograd would refuse to change in place; torch steps with one thread
(with more, torch's operators split a tensor between threads and are faster than the one-thread
kernel); p < 2 is a number whose exponent 1/(p − 1) torch takes as a whole number
(`norms.whole_exponent`: p = 1.1 in float32, 1.5, 1.25, …); η is a number the dtype holds; no
momentum; no divisor, or a one-element divisor with η = 1 (`functional.step_`'s one pass). The
version counters of w, θ and the copy advance as torch's in-place operations advance them.
Everything else, and every step where numba is missing or `ATTNBIAS_ENGINE_BACKEND=torch`
(`compiled_backend`), is torch's.

The classes reach it where they step tensor by tensor (a group of more than 2^20 entries on the
CPU) or through a group's flat buffer (`flat_duals`); smaller groups stepped tensor by tensor
take torch's multi-tensor kernels instead.
"""

from __future__ import annotations

import functools
import itertools
import logging

import numpy as np
import torch

from ..compiled_backend import backend_named, numba_module
from ..norms import squaring_steps, whole_exponent

logger = logging.getLogger(__name__)

MIN_ENTRIES = 1 << 16  # below this, torch's few calls cost less than a numba call's setup
DTYPES = (torch.float32, torch.float64)
KERNELS = ("AVX2",)  # torch's CPU kernels whose rounding the compiled step is (tested here)
# torch ≥ 2.2 has it; without it autograd could not be told that a tensor changed
VERSIONED = hasattr(torch.autograd.graph, "increment_version")


@functools.cache
def mirror_kernels():
    """The numba module, or None (said once, in one line) when numba is missing or unusable."""
    return numba_module(
        "attnbias.optim.kernels_mirror", logger, "mirror descent's large CPU steps use torch"
    )


@functools.cache
def cpu_kernels() -> str:
    """torch's CPU kernels in this process (`torch.backends.cpu.get_cpu_capability()`; fixed
    when torch loads)."""
    return torch.backends.cpu.get_cpu_capability()


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
    codes = squaring_steps(k)[1:] if k > 1 else []
    return even, k, np.array(codes, dtype=np.int64)


def fused_step_(
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
    if w.numel() < MIN_ENTRIES or isinstance(lr, torch.Tensor) or isinstance(p, torch.Tensor):
        return False  # (the small tensors of a model first: a step asks for each)
    if not p < 2.0 or torch.get_num_threads() != 1 or cpu_kernels() not in KERNELS:
        return False
    written = [w, theta] + ([] if copy is None else [copy])
    if not _covered([*written, g]) or (divisor is not None and not _one_pass(divisor, lr, w)):
        return False
    if torch.is_grad_enabled() and any(t.requires_grad for t in written):
        return False  # torch refuses (a leaf that requires grad), or records the operation
    scalar = np.float32 if w.dtype == torch.float32 else np.float64
    with np.errstate(over="ignore"):
        alpha = scalar(-lr)
    if np.isinf(alpha) and np.isfinite(lr):
        return False  # η beyond the dtype's range: torch refuses it
    plan = powers(float(p), w.dtype)
    if plan is None or not VERSIONED or backend_named() != "compiled" or mirror_kernels() is None:
        return False
    arrays = [t.detach().view(-1).numpy() for t in (theta, g, w, copy if copy is not None else w)]
    d = scalar(1.0 if divisor is None else divisor.item())
    mirror_kernels().mirror_step(*arrays, alpha, d, divisor is not None, *plan)
    # as torch's in-place operations do: autograd sees that these tensors changed
    for t in written:
        if not t.is_inference():
            torch.autograd.graph.increment_version(t)
    return True


def _covered(tensors: list[torch.Tensor]) -> bool:
    """One dtype of DTYPES and one shape, on the CPU, contiguous, neither negative nor
    conjugate views, and no two overlapping in memory (the kernel reads and writes them entry
    by entry)."""
    first = tensors[0]
    if first.dtype not in DTYPES:
        return False
    if not all(
        t.device.type == "cpu" and t.dtype == first.dtype and t.shape == first.shape
        and t.is_contiguous() and not t.is_neg() and not t.is_conj()
        for t in tensors
    ):  # fmt: skip
        return False
    spans = sorted((t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in tensors)
    return all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))


def _one_pass(divisor: torch.Tensor, lr, w: torch.Tensor) -> bool:
    """A divisor the one pass takes: one element of w's dtype on the CPU, broadcasting to w
    (no more dimensions), with η = 1."""
    return (
        lr == 1.0 and divisor.numel() == 1 and divisor.dim() <= w.dim()
        and divisor.dtype == w.dtype and divisor.device.type == "cpu"
    )  # fmt: skip
