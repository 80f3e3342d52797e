"""Stepping lists of tensors: views with the functional core's run axis, parts of a list, the
choice of torch._foreach_* kernels, reusable scratch buffers, and the Euclidean (p = 2) step
of the optimiser classes."""

from __future__ import annotations

import torch

from . import functional as F


def as_runs(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each tensor as a view with a leading run axis of length 1: the functional core's layout
    (in-place updates of the views write through to the tensors)."""
    return [t.unsqueeze(0) for t in tensors]


def split_quick(factors: list, found: list | None, lr) -> list[tuple]:
    """The parts of a step as (indices, divisors, η): the tensors with a factor F = D/η (from
    `step_divisors`) with those and η = 1, the others with their divisors `found` and η;
    parts without tensors left out."""
    quick = [k for k, f in enumerate(factors) if f is not None]
    rest = [k for k, f in enumerate(factors) if f is None]
    parts = ((quick, factors, 1.0), (rest, found, lr))
    return [(part, values, eta) for part, values, eta in parts if part]


def normalized_step_(
    weights, grads, divisors, factors, lr, foreach: bool, scratch, momentum=0.0, buffers=None
) -> None:
    """In place: w ← w − η·g/D for p = 2 (weights, grads and buffers with their run axis),
    `F.step_` (foreach or not): in one pass with the factors D/η and η = 1 where
    `step_divisors` gave one, with D and η elsewhere. With foreach and no
    momentum the factors' part divides by them as numbers (the same roundings as
    `F.step_`'s foreach addcdiv: g/F in the tensor's dtype, then the subtraction) where all
    tensors and factors share one dtype (a float64 factor of "global" with float32 tensors
    divides in float64 there: kept). On the CPU the factors' part is `F.step_`'s addcdiv of
    each tensor in one multi-tensor call (torch loops over the tensors in C++ there)."""
    for part, values, eta in split_quick(factors, divisors, lr):
        w, g, d, b = pick((weights, grads, values, buffers), part)
        quick = values is factors and momentum == 0.0
        if quick and foreach and one_dtype(d, g):
            # w − g/F with each F a number of the host (one sync for all): two multi-tensor
            # kernels; tensors F would need one kernel per tensor (they broadcast)
            scalars = torch.cat([f.reshape(1).double() for f in d]).tolist()
            torch._foreach_add_(w, torch._foreach_div(g, scalars), alpha=-1.0)
        elif quick and on_cpu(w):
            # F is a normal number (never 0: `F.step_`'s "no step at zero" has nothing to
            # do), and a (1,) tensor broadcasts over a tensor with its run axis
            torch._foreach_addcdiv_(w, g, d, value=-1.0)
        elif foreach:
            F.step_(w, g, d, eta, momentum=momentum, buffers=b, foreach=True)
        else:
            spare = [s for (s,) in scratch.views(w, 1)]
            F.step_(w, g, d, eta, momentum=momentum, buffers=b, scratch=spare)


# Groups of up to this many entries take the torch._foreach_* kernels on the CPU too (where
# they are the same step bit for bit): their temporaries are small, and one call for all the
# tensors saves the per-tensor Python calls that are most of a small model's step.
SMALL_GROUP = 1 << 20


def small_on_cpu(tensors: list[torch.Tensor]) -> bool:
    """Whether the tensors are all on the CPU, SMALL_GROUP entries or fewer in all."""
    return on_cpu(tensors) and small_group(tensors)


def small_group(tensors: list[torch.Tensor]) -> bool:
    """Whether the tensors hold SMALL_GROUP entries or fewer in all."""
    return sum(t.numel() for t in tensors) <= SMALL_GROUP


def large_on_cpu(tensors: list[torch.Tensor]) -> bool:
    """Whether the tensors are all on the CPU, more than SMALL_GROUP entries in all (one loop:
    a small model's step calls it for a dozen tensors)."""
    total = 0
    for t in tensors:
        if not t.is_cpu:
            return False
        total += t.numel()
    return total > SMALL_GROUP


def on_cpu(tensors: list[torch.Tensor]) -> bool:
    """Whether every tensor is on the CPU (where torch._foreach_* ops loop over the tensors,
    calling each tensor's own kernel: the same results as a loop of ours, bit for bit)."""
    return all(t.device.type == "cpu" for t in tensors)


def one_dtype(factors: list[torch.Tensor], tensors: list[torch.Tensor]) -> bool:
    """Whether the tensors share one dtype and each factor has it."""
    return len({x.dtype for x in tensors}) == 1 and all(
        f.dtype == x.dtype for f, x in zip(factors, tensors)
    )


def pick(lists, indices: list[int]) -> tuple:
    """The entries `indices` of each list (None stays None)."""
    return tuple(None if x is None else [x[k] for k in indices] for x in lists)


class ScratchSpace:
    """Scratch memory for the temporaries of a step: one flat buffer per dtype and device,
    reused by every tensor and every step (allocating tens of MB per step costs more than the
    arithmetic on them: page faults). Not optimiser state: never saved, rebuilt on demand."""

    def __init__(self):
        self.buffers: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}
        # the views last handed out, by the shapes asked for: building a hundred views costs
        # more than a small tensor's step
        self.handed: dict[tuple, list[list[torch.Tensor]]] = {}

    def views(self, tensors: list[torch.Tensor], count: int) -> list[list[torch.Tensor]]:
        """For each tensor, `count` disjoint buffers shaped like it. The buffers of different
        tensors overlap: use them one tensor at a time."""
        asked = (count, *((t.shape, t.dtype, t.device) for t in tensors))
        if asked in self.handed:
            return self.handed[asked]
        need: dict[tuple[torch.dtype, torch.device], int] = {}
        for t in tensors:
            key = (t.dtype, t.device)
            need[key] = max(need.get(key, 0), count * t.numel())
        for (dtype, device), size in need.items():
            self._reserve(dtype, device, size)
        out = []
        for t in tensors:
            buffer, n = self.buffers[(t.dtype, t.device)], t.numel()
            out.append([buffer[k * n : (k + 1) * n].view(t.shape) for k in range(count)])
        return self._hand(asked, out)

    def laid_out(self, tensors: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, list]:
        """Two disjoint one-dimensional buffers as long as the tensors together (of the first
        one's dtype and device), and views of the first shaped as each tensor, laid end to
        end: one torch._foreach_copy_ fills it. They overlap the buffers of `views`: use one
        or the other at a time."""
        asked = ("laid out", *((t.shape, t.dtype, t.device) for t in tensors))
        if asked in self.handed:
            return self.handed[asked]
        size = sum(t.numel() for t in tensors)
        buffer = self._reserve(tensors[0].dtype, tensors[0].device, 2 * size)
        entries, powers = buffer[:size], buffer[size : 2 * size]
        views, start = [], 0
        for t in tensors:
            views.append(entries[start : start + t.numel()].view(t.shape))
            start += t.numel()
        return self._hand(asked, (entries, powers, views))

    def _hand(self, asked: tuple, out):
        if len(self.handed) >= 16:  # shapes change (gathered rows): keep a few
            self.handed.clear()
        self.handed[asked] = out
        return out

    def _reserve(self, dtype: torch.dtype, device: torch.device, size: int) -> torch.Tensor:
        """The buffer of this dtype and device, grown to at least `size` entries."""
        key = (dtype, device)
        if key not in self.buffers or self.buffers[key].numel() < size:
            self.buffers[key] = torch.empty(size, dtype=dtype, device=device)
            self.handed.clear()  # views of the buffer replaced
        return self.buffers[key]
