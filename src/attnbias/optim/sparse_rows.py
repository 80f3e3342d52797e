"""Sparse rows of a step: a gradient that is zero outside a few rows (a word embedding's) is
stepped on those rows alone, gathered and scattered back."""

from __future__ import annotations

import torch

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
    """Indices of the rows (first dimension) of `grad` with a nonzero or NaN entry (or −0.0:
    stepping a row with a zero gradient changes nothing), when the gradient is on the CPU and
    at most SPARSE_MAX_FRACTION of its rows are touched; else None (the whole tensor is
    stepped)."""
    n = grad.shape[0] if grad.dim() >= 2 else 0
    if grad.device.type != "cpu" or n < SPARSE_MIN_ROWS or grad.numel() < SPARSE_MIN_SIZE:
        return None
    rest = tuple(range(1, grad.dim()))
    sample = grad[:: max(1, n // SPARSE_SAMPLE)]
    if bool((sample != 0).any(rest).float().mean() > SPARSE_MAX_FRACTION):
        return None
    if grad.stride(-1) == 1:  # one reduction over the bytes: a row is touched if any is set
        touched = grad.view(torch.uint8).amax(rest) != 0
    else:  # two reductions and no temporary the size of grad; NaN ≠ 0, so a NaN row counts
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
