"""Batched steps of the optimisers outside the mirror-descent core (`engine.update`): the
steepest-descent rules of `optim.steepest`, Adam with rescaled moments (`optim.adam`), and
torch's own Muon and SGD.

A batch holds runs of one family only (`RunSpec.structure` includes it). A stepper advances
every run of its batch in place, and `take(rows, params)` keeps the state of the runs that go
on (the batch's own `take` has sliced their parameters to `params`).
"""

from __future__ import annotations

import json

import numpy as np
import torch

from ..optim.adam import Moments, adam_step_
from ..optim.algorithm import Algorithm
from ..optim.steepest import KINDS, steepest_step_
from .update import true_scale


class SteepestRuns:
    """Normalized steepest descent of R runs, each with its own η, β, norm (ℓp or spectral)."""

    def __init__(self, algorithms: list[Algorithm], dtype=torch.float64, device=None):
        methods = {(a.method, a.nesterov, a.momentum_on) for a in algorithms}
        if len(methods) != 1:
            raise ValueError(
                "a batch needs one spectral method and one kind of momentum (nesterov, "
                f"momentum_on), got {sorted(methods)}"
            )
        self.method, self.nesterov, self.momentum_on = methods.pop()
        self.algorithms = algorithms

        def col(values):
            return torch.tensor(values, dtype=dtype, device=device)

        self.lr = col([a.lr for a in algorithms])
        self.momentum = col([a.momentum for a in algorithms])
        kinds = [a.rule.steepest_kind for a in algorithms]
        norms = [a.steepest_norm for a in algorithms]
        # Floats when every run shares them: the optimiser classes' exact code path.
        self.kind = kinds[0] if len(set(kinds)) == 1 else col([KINDS.index(k) for k in kinds])
        self.p = norms[0] if len(set(norms)) == 1 else col(norms)
        self.uses_momentum = any(a.momentum > 0 for a in algorithms)
        # the SVD refuses a batch in which any run's matrix is not finite
        self.svd = self.method == "svd" and "spectral" in kinds

    def step(self, params, grads, log_scales, buffers) -> None:
        """Steepest directions do not depend on the gradient's scale: without momentum they
        take the log-scaled gradients as they are (exact where the true ones underflow), and
        so does momentum on the directions; momentum on the gradients adds gradients of
        different steps, so it needs their true scale.

        Where an SVD is taken, a run whose gradient or momentum is not finite (it diverged)
        is stepped on a matrix of ones instead and its weights are then set to NaN: it stays
        diverged (`engine.measure.run_status`) and the other runs step as they would alone."""
        if self.uses_momentum and self.momentum_on == "gradient":
            grads = true_scale(grads, log_scales)
        diverged = self.diverged(grads, buffers) if self.svd else None
        if diverged is not None:
            grads = [torch.where(run_mask(diverged, g), 1.0, g) for g in grads]
            for m in buffers if self.uses_momentum else ():
                m.masked_fill_(run_mask(diverged, m), 0.0)
        steepest_step_(
            params,
            grads,
            self.lr,
            kind=self.kind,
            p=self.p,
            method=self.method,
            momentum=self.momentum if self.uses_momentum else 0.0,
            buffers=buffers,
            nesterov=self.nesterov,
            momentum_on=self.momentum_on,
        )
        if diverged is not None:
            for w in params:
                w.masked_fill_(run_mask(diverged, w), float("nan"))

    def diverged(self, grads, buffers) -> torch.Tensor:
        """(R,) True for the runs whose gradients (or momentum) hold a non-finite entry."""
        tensors = [*grads, *(buffers if self.uses_momentum else ())]
        finite = [torch.isfinite(t).flatten(1).all(1) for t in tensors]
        return ~torch.stack(finite).all(0)

    def take(self, rows: np.ndarray, params) -> SteepestRuns:
        return SteepestRuns([self.algorithms[r] for r in rows], self.lr.dtype, self.lr.device)


ADAM_DEFAULTS = {"betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False,
                 "decoupled_weight_decay": False}  # fmt: skip
# torch.optim.Adam's keywords that choose an implementation, not the update
ADAM_IMPLEMENTATION = ("foreach", "fused", "capturable", "differentiable")


class AdamRuns:
    """torch.optim.Adam's update for R runs in one tensor program, its moments rescaled per
    run (`optim.adam`: no g² underflows however small the gradient; where nothing would, the
    step is torch's bit for bit). The gradient is taken log-scaled, as the engine computes
    it. Every run of a batch is at the same step `t`, which a decaying rate
    (`Algorithm.lr_decay`) reads; its hyper-parameters are floats where every run shares
    them (torch's scalar kernels), else (R,) columns."""

    def __init__(self, algorithms: list[Algorithm], params, moments=None, t: int = 0):
        self.algorithms = algorithms
        self.t = t
        options = [adam_options(a) for a in algorithms]
        self.options = options
        amsgrad = {o["amsgrad"] for o in options}
        if len(amsgrad) != 1:
            raise ValueError("a batch of Adam runs needs one amsgrad setting for all its runs")
        keeps_max = amsgrad.pop()
        self.moments = moments or [Moments.zeros(w.detach(), keeps_max) for w in params]

    def column(self, values: list[float], like: torch.Tensor):
        """One float when every run has the same value, else an (R,) tensor."""
        if len(set(values)) == 1:
            return values[0]
        return torch.tensor(values, dtype=like.dtype, device=like.device)

    def step(self, params, grads, log_scales, buffers) -> None:
        t = self.t + 1  # torch's step count, incremented before the update
        rates = [a.lr_at(self.t) for a in self.algorithms]
        betas = [o["betas"] for o in self.options]
        decays = [o["weight_decay"] for o in self.options]
        decoupled = [o["decoupled_weight_decay"] and o["weight_decay"] != 0 for o in self.options]
        like = params[0]
        hyper = {
            "step_size": self.column([lr / (1 - b1**t) for lr, (b1, _) in zip(rates, betas)], like),
            "bias_correction2_sqrt": self.column([(1 - b2**t) ** 0.5 for _, b2 in betas], like),
            "one_minus_beta1": self.column([1 - b1 for b1, _ in betas], like),
            "beta2": self.column([b2 for _, b2 in betas], like),
            "one_minus_beta2": self.column([1 - b2 for _, b2 in betas], like),
            "eps": self.column([o["eps"] for o in self.options], like),
            "weight_decay": self.column(
                [0.0 if d else wd for d, wd in zip(decoupled, decays)], like
            ),
            "decay_factor": self.column(
                [1 - lr * wd if d else 1.0 for d, lr, wd in zip(decoupled, rates, decays)], like
            )
            if any(decoupled)
            else None,
        }
        for w, g, m, state in zip(params, grads, log_scales, self.moments):
            adam_step_(w, g, m, state, **hyper)
        self.t += 1

    def take(self, rows: np.ndarray, params) -> AdamRuns:
        index = torch.as_tensor(rows, device=params[0].device)
        moments = [state.take(index) for state in self.moments]
        return AdamRuns([self.algorithms[r] for r in rows], params, moments, self.t)


def adam_options(algorithm: Algorithm) -> dict:
    """The Adam keywords of `algorithm` with torch's defaults; ValueError for one that changes
    the update and that the rescaled Adam does not implement (maximize)."""
    options = {**ADAM_DEFAULTS, **(algorithm.options or {})}
    unknown = set(options) - set(ADAM_DEFAULTS) - set(ADAM_IMPLEMENTATION)
    if unknown:
        raise ValueError(
            f"algorithm {algorithm.name!r}: options {sorted(unknown)} are not implemented by "
            f"the engine's Adam; it takes {', '.join(ADAM_DEFAULTS)}"
        )
    return {**options, "betas": tuple(float(b) for b in options["betas"])}


def run_mask(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """An (R,) run mask shaped to broadcast over `like` (R, ...)."""
    return mask.reshape(-1, *[1] * (like.dim() - 1))


class TorchRuns:
    """torch's own optimisers (Adam, Muon, SGD) on each run's tensors, so every run is stepped
    by the very optimiser a single run would use: one optimiser per distinct algorithm, over
    all of its runs. Run r's parameters are views W[r] of the batch's stacked ones; the runs
    of an elementwise optimiser (`UpdateRule.elementwise`: the same operations on the same values
    as one tensor per run) that lie side by side in the batch share one slice W[a:b] instead
    (one dispatch per operation, not one per run; their state is split per run and joined
    again as the batch loses runs). Every run of a batch is at the same
    step `t`, which a decaying rate (`Algorithm.lr_decay`) reads."""

    def __init__(
        self, algorithms: list[Algorithm], params: list[torch.Tensor], states=None, t: int = 0
    ):
        self.algorithms = algorithms
        self.t = t
        self.grads = [torch.zeros_like(w) for w in params]  # the views' .grad point into these
        self.views = []
        for r in range(len(algorithms)):
            views = [w[r] for w in params]
            for view, g in zip(views, self.grads):
                view.grad = g[r]
            self.views.append(views)
        by_config: dict[str, list[int]] = {}
        for r, a in enumerate(algorithms):
            by_config.setdefault(json.dumps(a.to_dict(), sort_keys=True), []).append(r)
        self.groups = list(by_config.values())
        self.slices = [self._slices(runs, params) for runs in self.groups]
        self.optimizers = []
        for runs, slices in zip(self.groups, self.slices):
            held = slices or [v for r in runs for v in self.views[r]]
            optimizer = algorithms[runs[0]].torch_optimizer(held)
            if states:
                self._restore(optimizer, runs, slices, states)
            self.optimizers.append(optimizer)
        self.owner = {r: k for k, runs in enumerate(self.groups) for r in runs}
        self.owners = [algorithms[runs[0]] for runs in self.groups]

    def _slices(self, runs: list[int], params) -> list[torch.Tensor] | None:
        """The slices W[a:b] the runs a, …, b−1 share (with their gradients), or None where
        they do not lie side by side or their optimiser is not elementwise."""
        a, b = runs[0], runs[-1] + 1
        if not self.algorithms[a].rule.elementwise or runs != list(range(a, b)):
            return None
        slices = [w[a:b] for w in params]
        for piece, g in zip(slices, self.grads):
            piece.grad = g[a:b]
        return slices

    def _restore(self, optimizer, runs: list[int], slices, states) -> None:
        """Give `optimizer` the runs' states (`run_state`'s, per run), joined where shared."""
        if slices is None:
            for r in runs:
                for view, s in zip(self.views[r], states[r]):
                    if s:
                        optimizer.state[view] = s
            return
        for k, piece in enumerate(slices):
            per_run = [states[r][k] for r in runs]
            if per_run[0]:
                shape = piece.shape[1:]
                optimizer.state[piece] = {
                    key: torch.stack([s[key] for s in per_run]) if _per_entry(v, shape) else v
                    for key, v in per_run[0].items()
                }

    def step(self, params, grads, log_scales, buffers) -> None:
        for target, g in zip(self.grads, true_scale(grads, log_scales)):
            target.copy_(g)
        for algorithm, optimizer in zip(self.owners, self.optimizers):
            algorithm.schedule(optimizer, self.t)
            optimizer.step()
        self.t += 1

    def run_state(self, r: int) -> list[dict]:
        """Run r's optimiser state per parameter, as its own optimiser would keep it."""
        k = self.owner[r]
        optimizer, slices = self.optimizers[k], self.slices[k]
        if slices is None:
            return [optimizer.state.get(v, {}) for v in self.views[r]]
        j = r - self.groups[k][0]
        return [
            {key: v[j] if _per_entry(v, piece.shape) else _own(v) for key, v in state.items()}
            for piece, state in ((p, optimizer.state.get(p, {})) for p in slices)
        ]

    def take(self, rows: np.ndarray, params) -> TorchRuns:
        states = [self.run_state(r) for r in rows]
        return TorchRuns([self.algorithms[r] for r in rows], params, states, self.t)


def _own(value):
    """A run's own copy of a value its runs shared (Adam's step count: a tensor each optimiser
    increments in place, which two runs must not share)."""
    return value.clone() if isinstance(value, torch.Tensor) else value


def _per_entry(value, shape) -> bool:
    """Whether an optimiser's state value is a tensor of one value per entry of `shape`."""
    return isinstance(value, torch.Tensor) and value.shape == shape


def _steepest_runs(algorithms: list[Algorithm], params: list[torch.Tensor]) -> SteepestRuns:
    return SteepestRuns(algorithms, params[0].dtype, params[0].device)


def _mirror_core(algorithms: list[Algorithm], params: list[torch.Tensor]) -> None:
    return None  # the batch steps by the mirror-descent core itself (`update.step`)


# The engine's steppers by the name a rule gives as its family (`optim.registry.UpdateRule.family`).
STEPPERS = {
    "mirror": _mirror_core,
    "steepest": _steepest_runs,
    "adam": AdamRuns,
    "torch": TorchRuns,
}


def stepper(algorithms: list[Algorithm], params: list[torch.Tensor]):
    """The stepper of a batch of one family (None: the mirror-descent core, `update.step`);
    ValueError for a family the engine has no stepper for."""
    family = algorithms[0].family
    if family not in STEPPERS:
        raise ValueError(
            f"optimizer {algorithms[0].optimizer!r}: the engine has no stepper {family!r}; "
            f"a rule's family is one of {', '.join(STEPPERS)}"
        )
    return STEPPERS[family](algorithms, params)
