"""The dual iterates θ and the copies of w of one param group's mirror step, each kept as ONE
flat buffer (issue 31, goal 4): the state's `dual` and `weight` of each parameter are views
into them, so that a step of a small model is a dozen kernels over one buffer instead of a
dozen for each tensor (the comparison of w with its copy, θ − g/F, the power by squarings and
the sign). The parameters stay the user's own tensors: the step writes the new w into the
flat copy and copies it into them with one multi-tensor call.

Anything that breaks the layout (a checkpoint loaded, `.data` replaced by a tensor of another
shape, dtype or device, a parameter without a gradient this step) is found by identity
checks before a step, and the group is laid out again from its state (`FlatDuals.absorb`)."""

from __future__ import annotations

import torch

from .duals import fits
from .multi_tensor import small_group

# The flat path is taken where this is True (tests switch it off to step the reference: the
# per-tensor path, the same step).
ENABLED = True


def flat_step_possible(group: dict, params: list, weights: list, rows: list) -> bool:
    """Whether a group's mirror step can take the flat buffers: p < 2 a number, a float η,
    "none" or "global" normalisation (one divisor for all), every row stepped, the parameters
    stepped in place (float32 or float64, no working copies), of one dtype and device, a
    small group (`multi_tensor.small_group`: where per-call overhead is the cost; a large
    one would pay for the flat gradients and scratch, two more copies of the model)."""
    p, lr = group["p"], group["lr"]
    if not ENABLED or not p < 2.0 or isinstance(lr, torch.Tensor) or not params:
        return False
    if group["normalize"] == "per_tensor" or any(r is not None for r in rows):
        return False
    if any(x is not w for x, w in zip(weights, params)):
        return False
    first = params[0]
    if first.dtype not in (torch.float32, torch.float64):
        return False
    if any(w.dtype != first.dtype or w.device != first.device for w in params):
        return False
    return small_group(params)


class FlatDuals:
    """θ, the copy of w and a staging buffer (for the parameters' values, then the
    gradients) of one group's parameters, each one flat buffer laid out in the parameters'
    order, with a view shaped as each parameter."""

    def __init__(self, params: list[torch.Tensor]):
        self.keys = tuple(params)
        self.shapes = tuple(w.shape for w in params)
        size = sum(w.numel() for w in params)
        like = dict(dtype=params[0].dtype, device=params[0].device)
        self.theta, self.copy, self.staging = (torch.empty(size, **like) for _ in range(3))
        self.theta_views, self.copy_views, self.staging_views = (
            self.views_of(flat) for flat in (self.theta, self.copy, self.staging)
        )

    def views_of(self, flat: torch.Tensor) -> list[torch.Tensor]:
        out, start = [], 0
        for shape in self.shapes:
            n = shape.numel()
            out.append(flat[start : start + n].view(shape))
            start += n
        return out

    def holds(self, states: list[dict], params: list[torch.Tensor]) -> bool:
        """Whether these are the group's parameters as laid out (the same tensors, shapes,
        dtype and device) and each state's θ and copy of w are still the views."""
        if len(params) != len(self.keys):
            return False
        kind = (self.theta.dtype, self.theta.device)
        for key, w, shape, s, theta, copy in zip(
            self.keys, params, self.shapes, states, self.theta_views, self.copy_views
        ):
            if w is not key or w.shape != shape or (w.dtype, w.device) != kind:
                return False
            if s.get("dual") is not theta or s.get("weight") is not copy:
                return False
        return True

    def absorb(self, states: list[dict]) -> None:
        """Copy each state's θ and copy of w that fit into the views, and make the state hold
        the views (a state that does not fit is left as it is: `dual_iterates` builds it)."""
        for s, key, theta, copy in zip(states, self.keys, self.theta_views, self.copy_views):
            dual, weight = s.get("dual"), s.get("weight")
            if dual is theta and weight is copy:
                continue
            if fits(dual, key) and fits(weight, key):
                theta.copy_(dual)
                copy.copy_(weight)
                s["dual"], s["weight"] = theta, copy

    def stage(self, tensors: list[torch.Tensor]) -> torch.Tensor:
        """The tensors laid end to end in the staging buffer (one multi-tensor copy)."""
        torch._foreach_copy_(self.staging_views, tensors)
        return self.staging

    def publish(self, params: list[torch.Tensor]) -> None:
        """The new w, computed into the flat copy, written into the parameters."""
        torch._foreach_copy_(params, self.copy_views)
