"""R runs of equal shape stacked along a leading dimension: data, parameters, hyper-parameters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import torch

from ..norms import mirror_map
from . import fused, graphs, update
from .kernel import Stack
from .spec import RunSpec
from .steppers import stepper
from .update import Hyper


@dataclass
class RunBatch:
    data: Stack  # X, z, y and the fixed head
    names: tuple[str, ...]  # parameter names: ("W",) or ("K", "Q"), plus "v" if trained
    params: list[torch.Tensor]
    duals: list[torch.Tensor] | None  # θ = ∇ψ(w) of mirror descent (None when every p = 2)
    buffers: list[torch.Tensor]  # momentum
    hyper: Hyper
    steps: np.ndarray  # (R,) steps each run takes
    index: np.ndarray  # (R,) each run's position in the sweep's list of specs
    # steps runs outside the mirror-descent core (steepest descent, torch's Adam and Muon);
    # None: `update.step` with `hyper`
    stepper: object | None = None
    # the fused step's buffers, made at its first step (`take` starts a new one)
    fused_buffers: fused.StepBuffers | None = field(default=None, repr=False)
    # deferred range checks' flag, and on CUDA each kind of step's graph (`stepping`)
    range_flag: torch.Tensor | None = field(default=None, repr=False)
    graphs: dict = field(default_factory=dict, repr=False)
    # the compiled step's unchanging arguments, by its `lanes` (`compiled.kernel_inputs`)
    kernel_inputs: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_specs(cls, specs: list[RunSpec], index=None, device=None, dtype=torch.float64):
        structures = {s.structure for s in specs}
        if len(structures) != 1:
            raise ValueError(f"a batch needs runs of one structure, got {sorted(structures)}")

        def stack(arrays):
            return torch.as_tensor(np.stack(arrays), dtype=dtype, device=device)

        names = ("K", "Q") if specs[0].parameterization == "KQ" else ("W",)
        names += ("v",) if specs[0].train_head else ()
        params = [stack([s.init[k] for s in specs]) for k in names]
        fixed_head = None if specs[0].train_head else stack([s.problem.v for s in specs])
        # a run whose risk is its excess over the optimal tokens subtracts no L* from it
        excess = [s.excess_over_optimal for s in specs]
        f_stars = [0.0 if e else s.f_star() for s, e in zip(specs, excess)]
        hyper = Hyper.from_algorithms(
            [s.algorithm for s in specs], f_stars, dtype=dtype, device=device
        )
        opt = None
        if any(excess):
            opt = torch.as_tensor(np.stack([s.optimal_tokens() for s in specs]), device=device)
        p = hyper.mirror_p
        return cls(
            data=Stack(
                stack([s.problem.X for s in specs]),
                stack([s.problem.z for s in specs]),
                stack([s.problem.y for s in specs]),
                specs[0].loss,
                fixed_head,
                opt,
                torch.tensor(excess, device=device) if opt is not None else None,
            ),
            names=names,
            params=params,
            duals=None if p is None else [mirror_map(w, p) for w in params],
            buffers=[torch.zeros_like(w) for w in params],
            hyper=hyper,
            steps=np.array([s.steps for s in specs]),
            index=np.arange(len(specs)) if index is None else np.asarray(index),
            stepper=stepper([s.algorithm for s in specs], params),
        )

    def __len__(self) -> int:
        return len(self.steps)

    def take(self, keep: np.ndarray) -> RunBatch:
        """The runs where `keep` is True."""
        rows = torch.as_tensor(np.flatnonzero(keep), device=self.data.X.device)
        params = [w[rows] for w in self.params]
        return replace(
            self,
            data=self.data.take(rows),
            params=params,
            duals=None if self.duals is None else [t[rows] for t in self.duals],
            buffers=[m[rows] for m in self.buffers],
            hyper=self.hyper.take(rows),
            steps=self.steps[keep],
            index=self.index[keep],
            stepper=None
            if self.stepper is None
            else self.stepper.take(np.flatnonzero(keep), params),
            fused_buffers=None,
            range_flag=None,
            graphs={},
            kernel_inputs={},
        )

    def named(self) -> dict[str, torch.Tensor]:
        return dict(zip(self.names, self.params))

    def observed(self) -> dict[str, torch.Tensor]:
        """What is recorded: the attention matrix W (= K Qᵀ) and, if trained, the head v."""
        p = self.named()
        out = {"W": p["K"] @ p["Q"].mT if "K" in p else p["W"]}
        if "v" in p:
            out["v"] = p["v"]
        return out

    def gradients(
        self, fused_kernel: bool = False
    ) -> tuple[torch.Tensor | None, list[torch.Tensor], list[torch.Tensor], torch.Tensor | None]:
        """Each run's risk (R,) (None when no rule of the batch reads it), the closed-form
        gradient of every parameter in log scale, G̃, its log scale m: ∂L/∂θ = exp(m)·G̃, and
        the log of the risk, scale-safe for the runs whose risk is their excess over the
        optimal tokens and for a trained head (None without either: `Stack.log_risk`).
        fused_kernel: by
        `fused.scaled_gradients` (valid until the next fused call).

        For W = K Qᵀ with G = ∂L/∂W: ∂L/∂K = G Q and ∂L/∂Q = Gᵀ K (the scale of G)."""
        p = self.named()
        W = p["K"] @ p["Q"].mT if "K" in p else p["W"]
        if fused_kernel:
            loss, grads, scales, log_risk = fused.scaled_gradients(
                self.data, self.fused_step_buffers(), W, p.get("v"), self.hyper.needs_loss
            )
        else:
            loss, grads, scales, log_risk = self.data.scaled_gradients(
                W, p.get("v"), self.hyper.needs_loss
            )
        if "K" in p:
            grads = [grads[0] @ p["Q"], grads[0].mT @ p["K"], *grads[1:]]
            scales = [scales[0], *scales]
        return loss, grads, scales, log_risk

    def fused_step_buffers(self) -> fused.StepBuffers:
        if self.fused_buffers is None:
            self.fused_buffers = fused.StepBuffers(self.data, self.params)
        return self.fused_buffers

    def step(self, fused_step: bool = True, range_ok: torch.Tensor | None = None) -> None:
        """One step of every run, in place (fused_step=False: the unfused reference path).
        range_ok: defer mirror descent's range check (`optim.functional.step_`; only
        `defers_range_check` batches look at it)."""
        loss, grads, scales, log_risk = self.gradients(fused_step)
        if self.stepper is not None:
            self.stepper.step(self.params, grads, scales, self.buffers)
        else:
            fused_in = {}  # the fused step: its divisors' norms and temporaries in the workspace
            if fused_step:
                ws = self.fused_step_buffers()
                fused_in = dict(norms=fused.workspace_norms(ws), scratch=ws.scratch)
            update.step(
                self.params, self.duals, grads, scales, self.buffers, loss, self.hyper, range_ok,
                log_risk=log_risk, **fused_in,
            )  # fmt: skip

    def stepping(self, fused_step: bool = True, deferred: bool = False) -> Callable[[], None]:
        """One step as a call of no arguments; deferred: its range check clears `range_flag`
        (made here) instead of synchronising. On CUDA, for the fused step of the
        mirror-descent core: a replay of its graph (`engine.graphs`), captured at the first
        call, unless the step synchronises (a range check not deferred). The unfused step, a
        reference, is always taken eagerly."""
        if deferred and self.range_flag is None:
            self.range_flag = torch.ones((), dtype=torch.bool, device=self.data.X.device)
        step = partial(self.step, fused_step, self.range_flag if deferred else None)
        synchronises = self.defers_range_check and not deferred
        if not (self.data.X.is_cuda and fused_step) or self.stepper is not None or synchronises:
            return step
        key = (fused_step, deferred)
        if key not in self.graphs:
            self.graphs[key] = graphs.capture(step, self.state()) or step
        return self.graphs[key]

    @property
    def defers_range_check(self) -> bool:
        """Whether a step checks the range of dual iterates (mirror descent with some p > 2,
        or with p per run), a host synchronisation unless deferred."""
        p = self.hyper
        mirror = self.stepper is None and self.duals is not None
        return mirror and (p.uniform_p is None or p.uniform_p > 2.0)

    def state(self) -> list[torch.Tensor]:
        """Everything a step changes (to save and restore around deferred steps)."""
        return [*self.params, *(self.duals or []), *self.buffers]
