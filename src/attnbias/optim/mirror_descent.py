"""ℓp mirror descent (docs/theory.md#algorithms): p-GD of Sun et al. (2022), ℓp-AttGD of
Julistiono et al. (arXiv 2410.14581).

Potential ψ(w) = (1/p)‖w‖_p^p, mirror map ∇ψ(w) = sign(w)|w|^{p−1}, entrywise:

    ∇ψ(w⁺) = ∇ψ(w) − η g,     w⁺ = sign(θ)|θ|^{1/(p−1)},  θ the right-hand side.

With normalize, g is divided by its dual ℓq norm, q = p/(p−1), computed scale-safely.
p = 2 is exactly SGD (plain) or normalized GD (normalized). For p near 1, entries that start
at 0 (e.g. biases) move very slowly at first: w = |θ|^{1/(p−1)} is 1e-30 for θ = 1e-3, p = 1.1.
"""

from __future__ import annotations

import functools
import itertools
import math

import torch
from torch import Tensor

from .._validate import check_p
from ..norms import inverse_mirror_map
from . import functional as F
from .checked import CheckedOptimizer, StepBatch, check_normalize, decay_
from .divisors import step_divisors
from .duals import dual_iterates, fits, remember_weights, same_values
from .flat_duals import FlatDuals, flat_step_possible
from .guards import LOW_PRECISION, largest_magnitudes
from .multi_tensor import (
    ScratchSpace,
    as_runs,
    normalized_step_,
    pick,
    small_on_cpu,
    split_quick,
)
from .sparse_rows import gather_rows, scatter_rows_


class MirrorDescent(CheckedOptimizer):
    """ℓp mirror descent.

    Args:
        params: parameters or parameter groups.
        lr: step size η > 0 (a float or a one-element tensor).
        p: exponent of the potential, p > 1, finite (p = 2 is gradient descent). Default 2.
        normalize: False (plain MD, the default), True / "global" (the gradient divided by the
            dual ℓq norm of all the group's gradients together, the papers' ‖∇L‖_q) or
            "per_tensor" (each tensor's gradient by its own).
        weight_decay: λ ≥ 0, decoupled (as AdamW): w ← (1 − ηλ)w before each step, taken in
            the mirror space as θ ← (1 − ηλ)^{p−1}θ (the same shrink of w). Default 0.
        maximize: follow +g (maximise the objective). Default False.
        foreach: None (torch._foreach_* kernels where every parameter is on a GPU), True or
            False; the results are the same bit for bit.
        differentiable: False only (see `CheckedOptimizer`).

    State: per parameter with p ≠ 2, the dual iterate θ = ∇ψ(w) (`dual`, as large as the
    parameter; float32 for float16/bfloat16 ones) and a copy of w as the last step wrote it
    (`weight`, in the parameter's dtype); nothing at p = 2. The copy is what guarantees that
    an edit of the weights between steps is never undone: torch's version counter would miss
    an in-place edit through `.data` (`w.data.clamp_(...)`, WGAN's clipping), and the next
    step would recompute w from the stale θ, undoing the edit. It costs a comparison and a copy
    of w a step. Where a group can be stepped as one (p < 2, "none" or "global", a float lr,
    float32 or float64 parameters of one dtype and device, up to 2^20 entries in all), θ and
    the copies are views into one flat buffer each per group
    (`flat_duals.FlatDuals`; the parameters keep their own storage): the step is then a
    dozen kernels for the whole group, the per-tensor step bit for bit on the CPU. The state
    dict holds the views (each as large as its parameter) and loads as any. On the CPU (one
    thread, torch's AVX2 kernels, numba installed), a plain step of at least 2^16 entries at
    a p whose exponent 1/(p − 1) torch squares (p = 1.1 in float32) is one compiled pass,
    torch's bit for bit (`fused_mirror`): a group's flat buffer, or each tensor of a group of
    more than 2^20 entries.

    Every value is checked where it enters (TypeError for a wrong type, ValueError for a
    value out of range, naming the argument and the param group): here, in each param group,
    in add_param_group, in load_state_dict, and at each step (for what schedulers write).

    Any change to a parameter between steps is honoured, however it was made: the entries of
    w that differ from the copy (NaN counting as different) get θ = ∇ψ(w) of their new value,
    the others keep their θ. A NaN or infinite gradient raises FloatingPointError naming the
    parameter, with no parameter changed; so do NaN or infinite weights where p ≠ 2 (at
    p = 2 they stay as they are, as with torch.optim.SGD).

    Range: the step is computed scale-safely. Where θ = ∇ψ(w) does not fit the dtype (p > 2:
    |w|^{p−1} overflows already at |w| = 1.43 for p = 2000 in float64, and underflows for
    small |w|), the entries concerned are stepped in the log domain (`norms.log_domain_step`),
    so a result that fits is returned to about |log w|·eps relative (elsewhere, as before, to
    a few eps times the map's condition number 1/(p−1)). A result that does not fit (|w⁺|
    beyond the dtype's largest number) raises FloatingPointError naming the parameter, with
    no parameter changed; one below its smallest normal number is rounded as IEEE arithmetic
    does (θ keeps what w loses). Whether a step can leave the range is decided from a bound on
    max|θ| kept per tensor, so the check costs no pass over the weights (plain steps: one
    reduction over the gradient).

    Parameters: zero-size ones are skipped (nothing to step). float16 and bfloat16 ones are
    stepped in float32 (the dual iterate is kept in float32) and rounded back; a result
    beyond their range raises FloatingPointError. Complex (and other non-floating) ones are
    refused with TypeError naming the parameter.
    """

    def __init__(
        self,
        params,
        lr,
        p: float = 2.0,
        normalize: bool | str = False,
        **keywords,
    ):
        hyper = dict(lr=lr, p=p, normalize=normalize)
        super().__init__(params, self.with_keywords(hyper, keywords))

    def start_transients(self) -> None:
        self.scratch = ScratchSpace()
        # Not optimiser state (never saved: a checkpoint cannot vouch for it; rebuilt on
        # demand): per parameter (by id: the groups hold it), an upper bound on log max|θ|.
        self.dual_bounds: dict[int, float] = {}
        # Not optimiser state either: per group (by id), its θ and copies of w as flat
        # buffers (`flat_duals`), which the state's tensors are views into.
        self.flat_duals: dict[int, FlatDuals] = {}

    @classmethod
    def check_hyper(cls, hyper: dict, where: str) -> dict:
        name = cls.__name__
        return dict(
            p=check_p(hyper["p"], f"{name}: p{where}", minimum=1.0, strict=True),
            normalize=check_normalize(hyper["normalize"], f"{name}: normalize{where}"),
        )

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        # after a load that succeeded: a failed one changes nothing
        self.dual_bounds.clear()
        self.flat_duals.clear()

    def loaded(self, state_dict: dict) -> None:
        saved = saved_duals(state_dict, self.param_groups)
        for group in self.param_groups:
            for key in group["params"]:
                if key not in self.state or not isinstance(self.state[key].get("dual"), Tensor):
                    continue
                s, dual = self.state[key], saved.get(key)
                if key.dtype in LOW_PRECISION and dual is not None and dual.dtype == torch.float32:
                    # torch cast θ to the parameter's dtype; it is kept in float32
                    s["dual"] = dual.to(key.device)
                if not fits(s.get("weight"), key):
                    # a checkpoint without the copy of w (saved by a version that kept θ
                    # alone): rebuilt as what the last step wrote, (∇ψ)⁻¹(θ); entries where w
                    # differs from it get θ = ∇ψ(w) at the next step
                    s["weight"] = inverse_mirror_map(s["dual"], group["p"]).to(key.dtype)

    def sparse(self, group: dict, shrink: float) -> bool:
        return shrink == 1.0  # weight decay moves every row

    def prepare(self, batch: StepBatch):
        group, eta = batch.group, float(batch.group["lr"])
        p = group["p"]
        if p != 2.0:
            self._prepare_duals(batch)
        # (the run axis of the functional core only where something broadcasts per run)
        gathered, g = gather_rows(batch.followed, batch.rows), None
        flat = batch.parts.get("flat")
        if flat is not None:  # the gradients laid out as θ is (no run axis: one divisor)
            batch.parts["flat_grads"] = flat.stage(gathered)
        if group["normalize"] == "none":
            d, factors = None, [None] * len(gathered)
            sizes = largest_magnitudes("MirrorDescent", gathered, batch.culprit)
        else:  # |g/D| ≤ 1, D being a norm of g or of all the group's gradients
            g = gathered if flat is not None else as_runs(gathered)
            d, factors = step_divisors(
                "MirrorDescent", g, group["normalize"], eta, batch.culprit, p=p,
                scratch=self.scratch, laid_out=batch.parts.get("flat_grads"),
            )  # fmt: skip
            if p > 2.0:  # (the checked update divides first, as `F.step_` does)
                factors = [None] * len(g)
            sizes = [1.0] * len(g)
        batch.parts.update(gathered=gathered, g=g, divisors=d, factors=factors)
        if p == 2.0:  # SGD or normalized GD: the step moves an entry by at most η·max|g/D|
            return [eta * size for size in sizes]
        # the mirror step checks its own range, from a bound on log max|θ⁺| per tensor
        batch.parts["bounds"] = [
            log_add(self.dual_bounds[id(key)], safe_log(eta * size))
            for key, size in zip(batch.params, sizes)
        ]
        return None

    def _prepare_duals(self, batch: StepBatch) -> None:
        """The dual iterates of the batch's parameters (`duals.dual_iterates`), and the rows
        stepped: every row of a θ built just now."""
        p, params = batch.group["p"], batch.params
        states = [self.state[key] for key in params]
        flat, laid_out = self._flat_duals(batch, states)
        if laid_out and same_values(flat.stage(params), flat.copy):
            # w is what the last step wrote, everywhere: θ holds (`dual_iterates`)
            duals, status = flat.theta_views, [None] * len(params)
        else:
            duals, status = dual_iterates(states, params, batch.weights, p, batch.rows)
            if flat is not None:  # those built just now, into the flat buffers
                flat.absorb(states)
                duals = flat.theta_views
        # a new θ = ∇ψ(w) is not yet w's exact preimage: step every row once
        batch.rows = [None if s == "built" else r for r, s in zip(batch.rows, status)]
        for key, w, theta, s in zip(params, batch.weights, duals, status):
            if s is not None or id(key) not in self.dual_bounds:
                self.dual_bounds[id(key)] = dual_log_bound(theta, w, p)
        batch.parts.update(states=states, duals=duals, flat=flat)

    def _flat_duals(self, batch: StepBatch, states: list[dict]) -> tuple[FlatDuals | None, bool]:
        """The group's flat θ and copies of w (`flat_duals`), laid out again from the state
        where something broke the layout (None where the flat step does not apply), and
        whether every state is in it (False where some is still to be built: `dual_iterates`
        builds it, then it is absorbed)."""
        group, params = batch.group, batch.params
        if not flat_step_possible(group, params, batch.weights, batch.rows):
            return None, False
        flat = self.flat_duals.get(id(group))
        if flat is not None and flat.holds(states, params):
            return flat, True
        flat = self.flat_duals[id(group)] = FlatDuals(params)
        flat.absorb(states)
        return flat, flat.holds(states, params)

    def decay(self, batch: StepBatch) -> None:
        if batch.group["p"] == 2.0:
            super().decay(batch)
        # else θ ← (1 − ηλ)^{p−1} θ in the update: the same shrink of w

    def update(self, batch: StepBatch) -> None:
        parts, rows = batch.parts, batch.rows
        if batch.group["p"] == 2.0:
            w = gather_rows(batch.weights, rows)
            g = parts["g"] or as_runs(parts["gathered"])
            normalized_step_(
                as_runs(w), g, parts["divisors"], parts["factors"], batch.group["lr"],
                batch.foreach, self.scratch,
            )  # fmt: skip
            scatter_rows_(batch.weights, rows, w)
        else:
            self._mirror_update(batch)

    def _mirror_update(self, batch: StepBatch) -> None:
        params, weights, rows, parts = batch.params, batch.weights, batch.rows, batch.parts
        p, lr = batch.group["p"], batch.group["lr"]
        gathered, d, bounds = parts["gathered"], parts["divisors"], parts["bounds"]
        duals, states = parts["duals"], parts["states"]
        # (1 − ηλ)^{p−1} θ: the same shrink of w (|θ| only shrinks, so the bounds still hold)
        theta_shrink = batch.shrink ** (p - 1.0)
        flat = parts["flat"]
        if flat is not None:
            limit = dual_log_limit(p, params[0].dtype)
            if all(bound <= limit for bound in bounds):  # False for NaN
                self._flat_update(batch, flat, theta_shrink)
                return
        w, theta = gather_rows(weights, rows), gather_rows(duals, rows)
        # 1. tensors whose step might leave the range: stepped on copies and checked before
        # anything is written
        done = {}
        for k, key in enumerate(params):
            limit = dual_log_limit(p, key.dtype)
            if bounds[k] <= limit:  # False for NaN
                continue
            w_k, theta_k = (t.clone() if rows[k] is None else t for t in (w[k], theta[k]))
            theta_k.mul_(theta_shrink)
            F.step_(
                as_runs([w_k]), as_runs([gathered[k]]), None if d is None else [d[k]], lr, p=p,
                duals=as_runs([theta_k]),
            )  # fmt: skip
            self._check_result(batch.index, k, params, weights, w_k)
            done[k] = (w_k, theta_k)
        # 2. the others, in place (for gathered rows: on their copies)
        live = [k for k in range(len(params)) if k not in done]
        decay_([theta[k] for k in live], theta_shrink, foreach=False)
        # the copy of w that the next step compares with, taken as each tensor is stepped
        # (while w is in cache) where the step writes the parameter itself, whole
        direct = [rows[k] is None and weights[k] is params[k] for k in range(len(params))]
        copies = [states[k]["weight"] if direct[k] else None for k in live]
        # steps with a float η and p < 2 need no run axis (nothing broadcasts per run: a
        # class's divisors have one element, which broadcasts against a tensor of ≥ 1
        # dimension), nor, in `F.step_`'s multi-tensor path, scratch
        plain = d is None and p < 2.0 and not isinstance(lr, torch.Tensor)
        runless = plain or (
            p < 2.0 and not isinstance(lr, torch.Tensor) and all(w[k].dim() for k in live)
        )
        if runless:
            w_live, g_live, theta_live = pick((w, gathered, theta), live)
        else:
            g = parts["g"] or as_runs(gathered)
            w_live, g_live, theta_live = pick((as_runs(w), g, as_runs(theta)), live)
            copies = [None if c is None else c.unsqueeze(0) for c in copies]
        f_live, d_live = pick((parts["factors"], d), live)
        # D/η and η = 1 where D/η is a normal number: θ − g/(D/η) in one pass (`F.step_`)
        for part, divisors, rate in split_quick(f_live, d_live, lr):
            w_part, g_part, d_part, theta_part, c_part = pick(
                (w_live, g_live, divisors, theta_live, copies), part
            )
            foreach = batch.foreach or small_on_cpu(w_part)
            # `F.step_`'s multi-tensor path needs no scratch: plain steps, and D/η's one pass
            one_pass = plain or (p < 2.0 and isinstance(rate, float) and rate == 1.0)
            scratch = None
            if not (one_pass and foreach):
                scratch = [b for (b,) in self.scratch.views(w_part, 1)]
            F.step_(
                w_part, g_part, d_part, rate, p=p, duals=theta_part, scratch=scratch,
                copies=c_part, foreach=foreach,
            )  # fmt: skip
        for k, (w_k, theta_k) in done.items():
            if rows[k] is None:
                w[k].copy_(w_k)
                theta[k].copy_(theta_k)
            else:
                w[k], theta[k] = w_k, theta_k
        scatter_rows_(weights, rows, w)
        scatter_rows_(duals, rows, theta)
        copied = set(live) & {k for k, x in enumerate(direct) if x}
        parts.update(done=done, copied=copied)

    def _flat_update(self, batch: StepBatch, flat: FlatDuals, theta_shrink: float) -> None:
        """`_mirror_update` of a group in its flat buffers (`flat_duals`), every tensor in
        range: the same operations on the same values as the per-tensor step, one kernel
        each for the whole group. The new w goes into the flat copy, then the parameters."""
        parts, lr, p = batch.parts, batch.group["lr"], batch.group["p"]
        if theta_shrink != 1.0:
            flat.theta.mul_(theta_shrink)
        # "global" or "none": one divisor (and factor) for all the tensors, or none
        factor = parts["factors"][0]
        divisors = None if parts["divisors"] is None else parts["divisors"][:1]
        divisors, rate = ([factor], 1.0) if factor is not None else (divisors, lr)
        (spare,) = self.scratch.views([flat.copy], 1)[0]
        F.step_(
            [flat.copy], [parts["flat_grads"]], divisors, rate, p=p, duals=[flat.theta],
            scratch=[spare], pieces=[flat.copy_views],
        )  # fmt: skip
        flat.publish(batch.params)
        parts.update(done={}, copied=set(range(len(batch.params))))

    def written(self, batch: StepBatch) -> None:
        """After the write-back of a mirror step: the copies of w the next step compares with
        (`duals.remember_weights`), and the bounds on log max|θ|."""
        if batch.group["p"] == 2.0:
            return
        params, parts, p = batch.params, batch.parts, batch.group["p"]
        others = [k for k in range(len(params)) if k not in parts["copied"]]
        remember_weights(
            [parts["states"][k] for k in others], params=[params[k] for k in others],
            rows=[batch.rows[k] for k in others],
        )  # fmt: skip
        for k, key in enumerate(params):
            if k in parts["done"]:
                self.dual_bounds[id(key)] = dual_log_bound(parts["duals"][k], batch.weights[k], p)
            else:
                self.dual_bounds[id(key)] = parts["bounds"][k]

    def _check_result(self, index, k, params, weights, result) -> None:
        """Refuse a step whose result is not finite in the parameter's dtype, saying why."""
        w = params[k]
        if bool(torch.isfinite(result.to(w.dtype)).all()):
            return
        shape = tuple(w.shape)
        if not bool(torch.isfinite(weights[k]).all()):
            raise FloatingPointError(
                f"MirrorDescent: parameter {k} of group {index} (shape {shape}) is NaN or "
                "infinite before the step; no parameter was changed"
            )
        dtype = str(w.dtype).removeprefix("torch.")
        group = self.param_groups[index]
        raise FloatingPointError(
            f"MirrorDescent: the step of parameter {k} of group {index} (shape {shape}) "
            f"leaves {dtype}'s range: the exact |w| exceeds {torch.finfo(w.dtype).max:g} "
            f"(p = {group['p']:g}, lr = {float(group['lr']):g}); no parameter was changed. "
            "A smaller lr, or p closer to 2, keeps it in range."
        )


def saved_duals(state_dict: dict, groups: list[dict]) -> dict:
    """The dual iterates of a state dict that torch's load_state_dict accepted, as saved
    (before torch cast them), under the parameters they were loaded into."""
    state = state_dict["state"]
    ids = itertools.chain.from_iterable(g["params"] for g in state_dict["param_groups"])
    params = itertools.chain.from_iterable(g["params"] for g in groups)
    return {
        w: state[i]["dual"]
        for i, w in zip(ids, params)
        if isinstance(state.get(i), dict) and isinstance(state[i].get("dual"), Tensor)
    }


def dual_log_bound(theta: torch.Tensor, w: torch.Tensor, p: float) -> float:
    """An upper bound on log max|θ| over the exact dual iterates of a tensor: log max|θ| of
    the stored θ where it is finite; where some θ overflowed (p > 2) those are |w|^{p−1},
    with room for the rounding of w (1e-12 relative covers the log-domain step's). NaN if θ
    or w holds NaN."""
    if theta.numel() == 0:
        return -math.inf
    top = max(float(theta.amax()), -float(theta.amin()))
    if not math.isinf(top):
        return safe_log(top)
    return (p - 1.0) * (safe_log(max(float(w.amax()), -float(w.amin()))) + 1e-12)


@functools.lru_cache(maxsize=64)
def dual_log_limit(p: float, dtype: torch.dtype) -> float:
    """log of the largest |θ| whose w = |θ|^{1/(p−1)} is at most half the dtype's largest
    number: below it no rounding can carry w⁺ out of the range."""
    return (p - 1.0) * (math.log(torch.finfo(dtype).max) - math.log(2.0))


def safe_log(x: float) -> float:
    """math.log, with log 0 = −∞ and log NaN = NaN."""
    return math.log(x) if x > 0 else -math.inf if x == 0 else math.nan


def log_add(a: float, b: float) -> float:
    """log(e^a + e^b), without overflow; NaN if either is."""
    top = max(a, b)
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if top == -math.inf:
        return top
    return top + math.log1p(math.exp(-abs(a - b)))
