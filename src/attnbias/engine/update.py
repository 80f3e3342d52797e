"""One batched optimiser step for R runs at once: `attnbias.optim.functional`, the same update
rules the optimiser classes run, with one set of hyper-parameters per run (shape (R,)), so runs
of different algorithms, step sizes and p advance in one tensor program."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import torch

from ..norms import per_run
from ..optim.algorithm import Algorithm
from ..optim.divisors import GRADIENT_SCALE, STEP_RULES, Norms, divisors, gradient_norms
from ..optim.functional import step_


@dataclass
class Hyper:
    """Per-run hyper-parameters, each a tensor of shape (R,)."""

    p: torch.Tensor
    lr: torch.Tensor  # 1 for Polyak, whose step is all in its divisor
    cap: torch.Tensor  # Polyak's γ_b (∞ for the others)
    momentum: torch.Tensor
    rule: torch.Tensor  # index into STEP_RULES (the compiled kernels' encoding)
    c: torch.Tensor
    f_star: torch.Tensor
    # Python-level facts about the batch that choose fast paths (derived, not stored state).
    uniform_p: float | None = field(init=False)
    rules: frozenset[str] = field(init=False)  # the step rules present
    uniform_rule: str | None = field(init=False)
    # the step rules as `divisors` takes them: the one name, or {name: (R,) runs that take it}
    step_rules: str | dict[str, torch.Tensor] = field(init=False)
    has_momentum: bool = field(init=False)
    needs_loss: bool = field(init=False)

    def __post_init__(self):
        ps, rules = set(self.p.tolist()), {STEP_RULES[r] for r in self.rule.tolist()}
        self.uniform_p = next(iter(ps)) if len(ps) == 1 else None
        self.rules = frozenset(rules)
        self.uniform_rule = next(iter(rules)) if len(rules) == 1 else None
        self.step_rules = self.uniform_rule or {
            name: self.rule == STEP_RULES.index(name) for name in STEP_RULES if name in rules
        }
        self.has_momentum = bool((self.momentum > 0).any())
        self.needs_loss = bool({"loss", "polyak"} & rules)

    @classmethod
    def from_algorithms(
        cls, algorithms: list[Algorithm], f_stars: list[float], dtype=torch.float64, device=None
    ) -> Hyper:
        capped = [a.rule.lr_is_cap for a in algorithms]

        def col(values):
            return torch.tensor(values, dtype=dtype, device=device)

        return cls(
            p=col([a.mirror_p for a in algorithms]),
            lr=col([1.0 if cap else a.lr for a, cap in zip(algorithms, capped)]),
            cap=col([a.lr if cap else float("inf") for a, cap in zip(algorithms, capped)]),
            momentum=col([a.momentum for a in algorithms]),
            rule=torch.tensor([STEP_RULES.index(a.step_rule) for a in algorithms], device=device),
            c=col([a.c for a in algorithms]),
            f_star=col(f_stars),
        )

    @property
    def mirror_p(self) -> float | torch.Tensor | None:
        """The mirror exponent as the update core takes it: a float when every run shares it,
        else the (R,) tensor; None when every run is Euclidean (p = 2, no dual iterates)."""
        if self.uniform_p == 2.0:
            return None
        return self.p if self.uniform_p is None else self.uniform_p

    def take(self, rows: torch.Tensor) -> Hyper:
        return Hyper(**{f.name: getattr(self, f.name)[rows] for f in fields(self) if f.init})


def step(
    params: list[torch.Tensor],
    duals: list[torch.Tensor] | None,
    grads: list[torch.Tensor],
    log_scales: list[torch.Tensor],
    buffers: list[torch.Tensor],
    loss: torch.Tensor | None,
    hp: Hyper,
    range_ok: torch.Tensor | None = None,
    *,
    log_risk: torch.Tensor | None = None,
    norms: Norms = gradient_norms,
    scratch: list[torch.Tensor] | None = None,
) -> None:
    """In place: one step of every run (parameters, dual iterates and momentum buffers), from
    gradients given in log scale (∂L/∂θ_k = exp(m_k)·G̃_k, see `Stack.scaled_gradients`);
    range_ok: as `optim.functional.step_`'s. log_risk: the log of `loss`, scale-safe where
    the risk underflows (`Stack.log_risk`), or None. norms, scratch: how the divisors' norms
    are computed (`optim.divisors.divisors`) and buffers for the step's temporaries (the
    fused step's workspace)."""
    grads = in_rule_scale(grads, log_scales, hp)
    p = 2.0 if hp.mirror_p is None else hp.mirror_p
    d = divisors(
        grads, hp.step_rules, p=p, loss=loss, f_star=hp.f_star, c=hp.c, cap=hp.cap, norms=norms,
        log_scales=log_scales, log_risk=log_risk,
    )  # fmt: skip
    step_(
        params,
        grads,
        d,
        hp.lr,
        p=p,
        duals=duals,
        momentum=hp.momentum if hp.has_momentum else 0.0,
        buffers=buffers,
        scratch=scratch,
        range_ok=range_ok,
    )


def in_rule_scale(
    grads: list[torch.Tensor], log_scales: list[torch.Tensor], hp: Hyper
) -> list[torch.Tensor]:
    """Each gradient at the scale its run's rule needs (`optim.divisors.GRADIENT_SCALE`).
    "own" (per_tensor: each tensor divided by its own norm; polyak, whose divisor carries each
    tensor's scale, `optim.divisors.polyak_divisors`): G̃ as it is, so the step is exact
    however small ∂L/∂θ is. "shared" (global): all tensors of a run relative to the largest
    scale among them. "true" (none, loss): the gradient itself, exp(m)·G̃, which underflows
    as the true one does."""
    scale = GRADIENT_SCALE.get(hp.uniform_rule)
    if scale == "own" or (scale == "shared" and len(grads) == 1):
        return grads
    if scale == "true":
        return true_scale(grads, log_scales)
    top = torch.stack(log_scales).amax(0)
    exponents_of = {
        "true": log_scales,
        "own": [None] * len(grads),
        "shared": [None] * len(grads) if len(grads) == 1 else [m - top for m in log_scales],
    }
    relative = {rule: exponents_of[GRADIENT_SCALE[rule]] for rule in STEP_RULES}
    if hp.uniform_rule is not None:
        exponents = relative[hp.uniform_rule]
    else:
        exponents = []
        for k, m in enumerate(log_scales):
            e = torch.zeros_like(m)
            for rule, runs in hp.step_rules.items():
                if relative[rule][k] is not None:
                    e = torch.where(runs, relative[rule][k], e)
            exponents.append(e)
    return [g if e is None else g * per_run(torch.exp(e), g) for g, e in zip(grads, exponents)]


def true_scale(grads: list[torch.Tensor], log_scales: list[torch.Tensor]) -> list[torch.Tensor]:
    """∂L/∂θ_k = exp(m_k)·G̃_k itself (underflowing where the true gradient does)."""
    return [g * per_run(torch.exp(m), g) for g, m in zip(grads, log_scales)]
