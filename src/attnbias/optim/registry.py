"""The optimiser vocabulary as data: `RULES`, one `UpdateRule` per named update rule.

A rule knows the hyper-parameters it reads (fields of `optim.algorithm.Algorithm`), the
normalisations it allows, how to build its `torch.optim.Optimizer` for one model (`build`), and
which stepper of the batched engine advances many runs of it at once (`family`: a name that
`engine.steppers.STEPPERS` looks up). Nothing outside this table tests a rule's name: the
engine, the real-data loop and the configs read these fields. A new rule is one `UpdateRule`
given to `register` (docs/ARCHITECTURE.md, "Adding an optimiser"); the `[[optimizers]]` tables
of the real-data experiments name rules by the NGD paper's minibatch names (`TABLE_NAMES`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from .mirror_descent import MirrorDescent
from .normalized_gd import NormalizedGD
from .polyak import PolyakStep
from .steepest_descent import SignGD, SpectralDescent, SteepestDescent

if TYPE_CHECKING:
    from .algorithm import Algorithm

# builds a rule's optimiser: (algorithm, params, f_star) -> optimiser; f_star is Polyak's
# resolved L* (None: the algorithm's own)
Build = Callable[["Algorithm", list, "float | None"], torch.optim.Optimizer]


@dataclass(frozen=True)
class UpdateRule:
    """A named update rule.

    family: the engine's stepper for it, by name: "mirror" (the mirror-descent core,
    `optim.functional`), "steepest" (the steepest-descent core, `optim.steepest`), "adam"
    (Adam with rescaled moments, `optim.adam`) or "torch" (each run's own optimiser, from
    `build`). reads: the Algorithm fields it reads besides lr.
    normalize: the normalisations it allows (None: plain steps; "loss" divides by L); the first
    is its default. build: its optimiser for one model. torch_class: torch's optimiser, for
    rules that are torch's own (None where this torch lacks it; `requires` says what it needs).
    The engine's cores read the rest: core_rule, the mirror core's step rule when it is fixed
    (else the normalisation); lr_is_cap, lr caps the step (Polyak's γ_b) and the core's lr is 1;
    steepest_kind and fixed_norm, the steepest core's norm ("spectral", or ℓp with p = the
    Algorithm's norm unless fixed); elementwise, its torch optimiser acts on each entry alone,
    so runs of one configuration may share one tensor (`engine.steppers.TorchRuns`);
    version, bumped when the engine's arithmetic for it changes (a run's store key holds it
    when non-zero, so only that rule's stored runs are retrained)."""

    name: str
    family: str
    summary: str
    build: Build
    reads: tuple[str, ...] = ()
    normalize: tuple = (None,)
    torch_class: type | None = None
    requires: str = ""
    core_rule: str | None = None
    lr_is_cap: bool = False
    steepest_kind: str = "lp"
    fixed_norm: float | None = None
    elementwise: bool = False
    version: int = 0

    @property
    def available(self) -> bool:
        """Whether this torch can build it (all but torch's Muon on torch < 2.9 can)."""
        return self.torch_class is not None or not self.requires


def _mirror_descent(algorithm: Algorithm, params, f_star=None):
    # "loss" is the caller's: it divides lr by the loss before each step (engine.single_run)
    normalize = False if algorithm.normalize in (None, "loss") else algorithm.normalize
    return MirrorDescent(params, algorithm.lr, algorithm.mirror_p, normalize)


def _normalized_gd(algorithm: Algorithm, params, f_star=None):
    return NormalizedGD(params, algorithm.lr, algorithm.momentum, algorithm.normalize)


def _polyak(algorithm: Algorithm, params, f_star=None):
    if f_star is None:
        if algorithm.f_star == "optimal":
            raise ValueError(
                f"algorithm {algorithm.name!r}: f_star 'optimal' needs the problem's optimal "
                "loss; pass f_star"
            )
        f_star = algorithm.f_star
    return PolyakStep(params, algorithm.lr, f_star=f_star, c=algorithm.c)


def _sign(algorithm: Algorithm, params, f_star=None):
    return SignGD(params, algorithm.lr, algorithm.momentum, **algorithm.momentum_keywords)


def _spectral(algorithm: Algorithm, params, f_star=None):
    return SpectralDescent(
        params, algorithm.lr, algorithm.momentum, algorithm.method, **algorithm.momentum_keywords
    )


def _steepest(algorithm: Algorithm, params, f_star=None):
    return SteepestDescent(
        params, algorithm.lr, algorithm.norm, algorithm.momentum, **algorithm.momentum_keywords
    )


def _torch_own(algorithm: Algorithm, params, f_star=None):
    rule = algorithm.rule
    if rule.torch_class is None:
        raise ValueError(
            f"algorithm {algorithm.name!r}: optimizer {rule.name!r} needs {rule.requires}; "
            f"this torch is {torch.__version__}: upgrade torch or leave it out"
        )
    return rule.torch_class(params, lr=algorithm.lr, **(algorithm.options or {}))


# the momentum of the steepest-descent rules: β, Nesterov's or not, on the gradient or the
# direction (`optim.steepest`)
MOMENTUM_FIELDS = ("momentum", "nesterov", "momentum_on")
TORCH_FIELDS = ("options", "lr_decay")

RULES: dict[str, UpdateRule] = {
    rule.name: rule
    for rule in (
        UpdateRule("gd", "mirror",
                   "gradient descent; normalize='loss': steps η/L (NGD paper eq. 13)",
                   _mirror_descent, normalize=(None, "loss")),
        UpdateRule("md", "mirror", "ℓp mirror descent, potential ‖·‖_p^p/p", _mirror_descent,
                   ("p",), (None, "per_tensor", "global", "loss")),
        UpdateRule("ngd", "mirror", "normalized GD (with momentum: NGD-mom; on minibatches: SNGD)",
                   _normalized_gd, ("momentum",), ("global", "per_tensor")),
        UpdateRule("polyak", "mirror", "Polyak step capped at lr = γ_b (on minibatches: SPS)",
                   _polyak, ("c", "f_star"), core_rule="polyak", lr_is_cap=True),
        UpdateRule("sign", "steepest", "SignGD: steepest descent in ℓ∞", _sign, MOMENTUM_FIELDS,
                   fixed_norm=float("inf")),
        UpdateRule("spectral", "steepest", "steepest descent in the spectral norm", _spectral,
                   (*MOMENTUM_FIELDS, "method"), steepest_kind="spectral"),
        UpdateRule("steepest", "steepest", "steepest descent in ℓp, p = norm", _steepest,
                   (*MOMENTUM_FIELDS, "norm")),
        # the engine steps it with its moments rescaled (optim.adam), the same update
        UpdateRule("adam", "adam", "torch's Adam (the engine's: moments rescaled, optim.adam)",
                   _torch_own, TORCH_FIELDS, torch_class=torch.optim.Adam, elementwise=True,
                   version=1),
        # torch.optim.Muon exists from torch 2.9 on; with an older torch it is refused by name.
        UpdateRule("muon", "torch", "torch's Muon", _torch_own, TORCH_FIELDS,
                   torch_class=getattr(torch.optim, "Muon", None),
                   requires="torch.optim.Muon (torch >= 2.9)"),
        UpdateRule("sgd", "torch", "torch's SGD (momentum, weight decay as options)", _torch_own,
                   TORCH_FIELDS, torch_class=torch.optim.SGD, elementwise=True),
    )
}  # fmt: skip
"""The named update rules, name → UpdateRule, in the order error messages list them (`register`
adds one)."""

# The Algorithm fields only some rules read; giving one to another rule is a config mistake.
HYPER_FIELDS = ("p", "momentum", "nesterov", "momentum_on", "c", "f_star", "norm", "method",
               *TORCH_FIELDS)  # fmt: skip


def register(rule: UpdateRule) -> UpdateRule:
    """Add a rule to `RULES` (an optimiser defined outside attnbias); configs may then name it
    as `optimizer = rule.name`. TypeError for a non-UpdateRule, ValueError for a taken name or a
    field no Algorithm has. Returns the rule."""
    if not isinstance(rule, UpdateRule):
        raise TypeError(f"rule must be a UpdateRule, got {type(rule).__name__}")
    if not isinstance(rule.name, str) or not rule.name:
        raise ValueError(f"rule.name must be a non-empty string, got {rule.name!r}")
    if rule.name in RULES:
        raise ValueError(f"rule.name {rule.name!r} is taken; RULES has {', '.join(RULES)}")
    if unknown := set(rule.reads) - set(HYPER_FIELDS):
        raise ValueError(f"rule.reads names no Algorithm field: {sorted(unknown)}")
    if not callable(rule.build):
        raise TypeError(f"rule.build must be callable, got {type(rule.build).__name__}")
    RULES[rule.name] = rule
    return rule


def available(optimizer: str) -> bool:
    """Whether this torch can build the rule named `optimizer` (an unknown name is left to the
    config's own check)."""
    rule = RULES.get(optimizer)
    return rule is None or rule.available


def readers(key: str) -> tuple[str, ...]:
    """The rules that read Algorithm field `key` (one of `HYPER_FIELDS`)."""
    return tuple(name for name, rule in RULES.items() if key in rule.reads)


@dataclass(frozen=True)
class TableName:
    """How an `[[optimizers]]` table of the real-data experiments names a rule: the rule, its
    display label (a format string over the Algorithm's fields) and the table's keys, each
    mapped to an Algorithm field ("options.KEY": a keyword of torch's optimiser)."""

    rule: str
    label: str
    keys: Mapping[str, str]
    required: tuple[str, ...] = ("lr",)


TABLE_NAMES: dict[str, TableName] = {
    "sgd": TableName("sgd", "SGD", {"lr": "lr", "momentum": "options.momentum",
                                    "weight_decay": "options.weight_decay"}),
    "adam": TableName("adam", "Adam", {"lr": "lr", "betas": "options.betas", "eps": "options.eps",
                                       "weight_decay": "options.weight_decay"}),
    "sngd": TableName("ngd", "SNGD", {"lr": "lr", "momentum": "momentum", "norm": "normalize"}),
    "sps": TableName("polyak", "SPS", {"lr_max": "lr", "f_star": "f_star", "c": "c"},
                     required=("lr_max",)),
    "md": TableName("md", "ℓ{p:g}-MD", {"lr": "lr", "p": "p", "normalize": "normalize"},
                    required=("lr", "p")),
}  # fmt: skip
