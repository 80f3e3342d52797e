"""Normalized steepest descent as `torch.optim` optimisers (docs/theory.md#atlas; Fan, Schmidt,
Thrampoulidis, arXiv 2502.04664): each converges, on linearly separable problems, in direction
to the max-margin solution of its own norm.

    SteepestDescent(norm=p)   entrywise ℓp, 1 < p ≤ ∞ (p = 2: NormalizedGD per tensor)
    SignGD                    entrywise ℓ∞: W ← W − η sign(m)
    SpectralDescent           operator 2-norm: W ← W − η U Vᵀ (matrices only)

with momentum m ← β m + g on the raw gradient (the update rules are `optim.steepest`; the
keywords nesterov and momentum_on choose Nesterov's momentum, as torch.optim.SGD has it, and
momentum on the direction instead, NGD-mom's order). Each tensor is its own steepest-descent
problem (the norm of a group of tensors is not defined).
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from .._validate import check_choice, check_scalar
from . import steepest
from .checked import TORCH_DEFAULTS, CheckedOptimizer, StepBatch, check_momentum
from .divisors import step_divisors
from .guards import check_finite, largest_entries
from .multi_tensor import ScratchSpace, as_runs, normalized_step_

# What every class here does with its inputs (appended to each class's docstring).
BEHAVIOUR = """
    Every value is checked where it enters (TypeError for a wrong type, ValueError for a
    value out of range, naming the argument and the param group): in the constructor, in
    each param group, in add_param_group, in load_state_dict, and at each step (for what
    schedulers write). A NaN or infinite gradient raises FloatingPointError naming the
    parameter, with no parameter changed. A step moves each entry by at most η; where that
    could carry finite weights past the dtype's largest number (η above ~1e292 in float64,
    1e31 in float32), the result is checked first and refused with FloatingPointError.

    Parameters: zero-size ones are skipped (nothing to step). float16 and bfloat16 ones are
    stepped in float32 (momentum buffers in float32) and rounded back; a result beyond their
    range raises FloatingPointError. Complex (and other non-floating) ones are refused with
    TypeError naming the parameter.

    Momentum keywords (keyword-only): nesterov (a bool, default False: W ← W − η Δ(g + β m),
    as torch.optim.SGD(nesterov=True)); momentum_on ("gradient", the default: m ← β m + g;
    "direction": m ← β m + Δ(g), W ← W − η m). Either needs momentum > 0.

    The torch.optim keywords (keyword-only): weight_decay λ ≥ 0, decoupled (as AdamW:
    w ← (1 − ηλ)w before each step; default 0); maximize (follow +g; default False); foreach
    (None: torch._foreach_* kernels where every parameter is on a GPU, for the weight decay
    and the negation of maximize; the direction is computed per tensor; the same results bit
    for bit); differentiable (False only, see `CheckedOptimizer`).

    State: a momentum buffer per parameter where momentum > 0 (float32 for float16/bfloat16
    parameters); nothing otherwise.
"""


class _Steepest(CheckedOptimizer):
    """The step shared by the three classes; `rule(group)` gives a group's "kind", "p" and
    "method" (the choices of `steepest.directions`)."""

    KEYWORDS: ClassVar[dict] = dict(nesterov=False, momentum_on="gradient", **TORCH_DEFAULTS)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n" + BEHAVIOUR

    def start_transients(self) -> None:
        self.scratch = ScratchSpace()

    @classmethod
    def check_hyper(cls, hyper: dict, where: str) -> dict:
        name = cls.__name__
        momentum = check_momentum(hyper["momentum"], f"{name}: momentum{where}")
        nesterov, on = hyper.get("nesterov", False), hyper.get("momentum_on", "gradient")
        if not isinstance(nesterov, bool):
            raise TypeError(f"{name}: nesterov{where} must be a bool, got {nesterov!r}")
        on = check_choice(on, f"{name}: momentum_on{where}", steepest.MOMENTUM_ON)
        if momentum == 0.0 and (nesterov or on != "gradient"):
            key = "nesterov" if nesterov else "momentum_on"
            raise ValueError(f"{name}: {key}{where} needs momentum > 0 (as torch.optim.SGD)")
        return dict(hyper, momentum=momentum, nesterov=nesterov, momentum_on=on)

    @staticmethod
    def rule(group: dict) -> dict:
        raise NotImplementedError

    def prepare(self, batch: StepBatch) -> float:
        # max|g| of each tensor: finite exactly where g is
        check_finite(type(self).__name__, largest_entries(batch.grads), batch.culprit)
        # |Δ| ≤ 1: a step moves an entry by at most η
        return float(batch.group["lr"])

    def update(self, batch: StepBatch) -> None:
        group, weights = batch.group, batch.weights
        beta, buffers, rule = group["momentum"], None, self.rule(group)
        if rule == dict(kind="lp", p=2.0) and beta == 0.0:
            # ℓ2: per-tensor normalized GD, taken as `NormalizedGD` takes it (quick norms,
            # one pass), so that the two stay the same bit for bit
            g, eta = as_runs(batch.followed), float(group["lr"])
            d, factors = step_divisors(type(self).__name__, g, "per_tensor", eta, batch.culprit)
            normalized_step_(
                as_runs(weights), g, d, factors, group["lr"], batch.foreach, self.scratch
            )
            return
        if beta != 0.0:
            buffers = as_runs(self.momentum_buffers(batch.params, weights))
        steepest.steepest_step_(
            as_runs(weights),
            as_runs(batch.followed),
            group["lr"],
            momentum=beta,
            buffers=buffers,
            nesterov=group.get("nesterov", False),
            momentum_on=group.get("momentum_on", "gradient"),
            **rule,
        )


class SteepestDescent(_Steepest):
    """Normalized steepest descent for the entrywise ℓp norm:
    W ← W − η sign(m)|m|^{q−1}/‖m‖_q^{q−1}, q = p/(p−1).

    Args:
        params: parameters or parameter groups.
        lr: step size η > 0 (a float or a one-element tensor).
        norm: the p of the entrywise ℓp norm, in (1, ∞] (float("inf") is SignGD, 2 is
            per-tensor NormalizedGD); default 2. (Not `p`: that is MirrorDescent's potential.)
        momentum: β in [0, 1), on the raw gradient; default 0.
    """

    def __init__(
        self,
        params,
        lr,
        norm: float = 2.0,
        momentum: float = 0.0,
        **keywords,
    ):
        hyper = dict(lr=lr, norm=norm, momentum=momentum)
        super().__init__(params, self.with_keywords(hyper, keywords))

    @classmethod
    def check_hyper(cls, hyper: dict, where: str) -> dict:
        norm = check_scalar(
            hyper["norm"], f"{cls.__name__}: norm{where}", low=1.0, include_low=False,
            allow_inf=True,
        )  # fmt: skip
        return super().check_hyper(dict(hyper, norm=float(norm)), where)

    @staticmethod
    def rule(group: dict) -> dict:
        return dict(kind="lp", p=group["norm"])


class SignGD(_Steepest):
    """Sign descent, normalized steepest descent for the entrywise ℓ∞ norm: W ← W − η sign(m).

    Args: params, lr (η > 0), momentum (β in [0, 1), on the raw gradient; default 0).
    """

    def __init__(
        self,
        params,
        lr,
        momentum: float = 0.0,
        **keywords,
    ):
        hyper = dict(lr=lr, momentum=momentum)
        super().__init__(params, self.with_keywords(hyper, keywords))

    @staticmethod
    def rule(group: dict) -> dict:
        return dict(kind="lp", p=math.inf)


class SpectralDescent(_Steepest):
    """Spectral descent, normalized steepest descent for the operator 2-norm:
    W ← W − η U Vᵀ with m = U Σ Vᵀ (thin SVD, nonzero singular values).

    Args:
        params: 2-d parameters (matrices) or groups of them; any other shape is refused with
            ValueError naming the parameter (here, in add_param_group and at each step).
        lr: step size η > 0; momentum: β in [0, 1), on the raw gradient (default 0).
        method: "svd" (exact, the default) or "newton-schulz" (cubic Newton–Schulz
            iterations on m/‖m‖_F, `optim.steepest.NS_STEPS` of them, as Muon orthogonalises
            without an SVD).
    """

    def __init__(
        self,
        params,
        lr,
        momentum: float = 0.0,
        method: str = "svd",
        **keywords,
    ):
        hyper = dict(lr=lr, momentum=momentum, method=method)
        super().__init__(params, self.with_keywords(hyper, keywords))

    @classmethod
    def check_hyper(cls, hyper: dict, where: str) -> dict:
        method = check_choice(hyper["method"], f"{cls.__name__}: method{where}", steepest.METHODS)
        return super().check_hyper(dict(hyper, method=method), where)

    def check_parameter(self, w: torch.Tensor, label: str) -> None:
        super().check_parameter(w, label)
        if w.dim() != 2:
            raise ValueError(
                f"SpectralDescent: {label} has shape {tuple(w.shape)}; the spectral norm "
                "needs matrices (2-d parameters), optimise the others with another optimiser"
            )

    @staticmethod
    def rule(group: dict) -> dict:
        return dict(kind="spectral", method=group["method"])
