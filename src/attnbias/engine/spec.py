"""What one run of a sweep is: data, initial parameters, algorithm, length, what to measure."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..data import Problem
from ..losses import get_loss
from ..optim.algorithm import Algorithm
from ..store import config_key
from ..svm import optimal_tokens

# Bump when the engine's results change meaning, so stored runs are not reused.
ENGINE_VERSION = 4  # 2: one update core, scale-safe norms, log-scale gradients; 3: margin gaps;
# 4: the fused step (engine.fused: same maths, other rounding)


@dataclass
class RunSpec:
    """One run. `config` describes the data and the initialisation (seeds, scales) in JSON;
    together with the rest of the fields it is hashed into the run's store key.

    init: initial parameters, "W" (d, d) or "K", "Q" (d, m); plus "v" (d,) to train the head.
    norms: Att-SVM norms (numbers p, or "nuc") whose solutions the run is measured against
    (the head is measured against the ℓp head-SVMs of the numeric ones).
    alpha: which tokens those SVMs select, "selected" (argmax of the final attention) or
    "optimal" (the problem's optimal tokens).
    keep_trajectory: store the recorded iterates too (for figures of a single run).
    optimal_excess: with a fixed head, also record L − L* over the optimal tokens
    ("excess/opt") and the other tokens' softmax mass ("rest/opt"), each from those tokens'
    scores, which float64 holds down to ~1e-308 where 1 − score and a difference of losses
    round to 0 below ~1e-16 (engine.measure).
    late_increment: also record, at each recorded step t, the alignment of the increment
    W_t − W_s with each Att-SVM, s the run's recorded step nearest t/2
    ("increment_alignment/<norm>"): the late increment cancels the part of W₀ no gradient
    reaches, which the iterate's own alignment carries for as long as ‖W_t‖ stays small.
    """

    config: dict
    problem: Problem
    algorithm: Algorithm
    steps: int
    init: dict[str, np.ndarray]
    loss: str = "logistic"
    norms: tuple = (2.0,)
    alpha: str = "selected"
    grid_points: int = 60
    keep_trajectory: bool = False
    optimal_excess: bool = False
    late_increment: bool = False
    record: dict = field(init=False)

    def __post_init__(self):
        if sorted(self.init) not in (["W"], ["W", "v"], ["K", "Q"], ["K", "Q", "v"]):
            raise ValueError(f"init must hold W or K, Q (and v), got {sorted(self.init)}")
        if self.alpha not in ("selected", "optimal"):
            raise ValueError(f"alpha must be 'selected' or 'optimal', got {self.alpha!r}")
        if not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"steps must be a positive integer, got {self.steps!r}")
        get_loss(self.loss)
        self.record = {
            **self.config,
            "algorithm": self.algorithm.to_dict(),
            "steps": self.steps,
            "loss": self.loss,
            "norms": list(self.norms),
            "alpha": self.alpha,
            "grid_points": self.grid_points,
            "keep_trajectory": self.keep_trajectory,
            "engine_version": ENGINE_VERSION,
        }
        for flag in ("optimal_excess", "late_increment"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be a bool, got {getattr(self, flag)!r}")
        measures = []  # runs stored without these metrics are not reused
        if self.optimal_excess:
            if self.train_head:
                raise ValueError("optimal_excess needs a fixed head (init without v)")
            measures += ["excess/opt", "rest/opt"]
        if self.late_increment:
            measures += ["increment_alignment"]
        if measures:
            self.record["measures"] = measures
        if self.excess_over_optimal:
            # its L − L* is computed scale-safely (losses.optimal_token_excess); runs stored
            # before, from the difference of two losses, are not reused
            self.record["polyak_gap"] = "optimal_token_excess"
        elif self.train_head and self.algorithm.step_rule == "polyak":
            # its log L is taken from the margins (losses.log_risk): runs stored before, whose
            # step stopped where L underflowed, are not reused
            self.record["polyak_gap"] = "log_risk"
        if self.algorithm.rule.version:  # only this rule's stored runs change meaning
            self.record["rule_version"] = self.algorithm.rule.version

    @property
    def key(self) -> str:
        return config_key(self.record)

    @property
    def parameterization(self) -> str:
        return "KQ" if "K" in self.init else "W"

    @property
    def train_head(self) -> bool:
        return "v" in self.init

    @property
    def structure(self) -> tuple:
        """Runs with equal structure can share one batch (one update core, one spectral
        method and one kind of momentum per batch: `engine.steppers`; one set of Att-SVM
        norms, which `measure` takes from the batch's first run)."""
        shapes = (self.init[k].shape for k in sorted(self.init))
        a = self.algorithm
        family = (a.family, a.method, a.nesterov, a.momentum_on)
        return (
            self.problem.X.shape,
            self.parameterization,
            self.train_head,
            self.optimal_excess,  # measured for a whole batch
            self.late_increment,
            self.loss,
            tuple(self.norms),
            *shapes,
            *family,
        )

    def optimal_tokens(self) -> np.ndarray:
        """The problem's optimal tokens: fixed by its generator, or argmax_t y_i vᵀx_{i,t}."""
        if self.problem.opt is not None:
            return np.asarray(self.problem.opt, dtype=np.int64)
        return optimal_tokens(self.problem.X, self.problem.y, self.problem.v)

    @property
    def excess_over_optimal(self) -> bool:
        """Whether the run's Polyak step takes L − L* over the optimal tokens (f_star
        "optimal") scale-safely, from the other tokens' scores (`losses.optimal_token_excess`)."""
        a = self.algorithm
        return a.f_star == "optimal" and a.step_rule == "polyak"

    def f_star(self) -> float:
        """Polyak's L*: a number, or for "optimal" the fixed-head loss with all attention on
        the optimal tokens, (1/n) Σ_i ℓ(γ_{i,opt_i})."""
        f_star = self.algorithm.f_star
        if f_star != "optimal":
            return float(f_star)
        if self.train_head:
            raise ValueError("f_star='optimal' needs a fixed head; use f_star = 0 when training v")
        X, y, v = self.problem.X, self.problem.y, self.problem.v
        opt = self.optimal_tokens()
        gamma = y * (X[np.arange(len(y)), opt] @ v)
        return float(get_loss(self.loss).value(torch.as_tensor(gamma)).mean())
