"""The one vocabulary of optimisers: the named update rules (`RULES`), each with the
hyper-parameters it reads, and `Algorithm`, one rule with its hyper-parameters as a value.

The batched engine steps an Algorithm for many runs at once, `torch_optimizer` builds the very
`attnbias.optim` (or torch) optimiser it is for one model (the real-data training loop,
`engine.single_run`), and configs name rules by these names: `[[algorithms]]` tables of the
synthetic experiments directly (`Algorithm.from_dict`), the `[[optimizers]]` tables of the
real-data experiments by the minibatch names of the NGD paper (SGD, SNGD, SPS; `TABLE_NAMES`,
`Algorithm.from_optimizer_table`). A new rule is one `Rule` here plus its update in
`attnbias.optim` (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace

import torch

from .._validate import check_scalar
from ..optim import (
    MirrorDescent,
    NormalizedGD,
    PolyakStep,
    SignGD,
    SpectralDescent,
    SteepestDescent,
)
from ..optim.functional import NORMALIZE_TRUE
from ..optim.steepest import METHODS, MOMENTUM_ON


@dataclass(frozen=True)
class Rule:
    """A named update rule.

    family: how the batched engine steps it: the mirror-descent core (`optim.functional`), the
    steepest-descent core (`optim.steepest`) or torch's own optimiser on each run's tensors.
    reads: the Algorithm fields it reads besides lr. normalize: the normalisations it allows
    (None: plain steps; "loss" divides by L); the first is its default. torch_class: torch's
    optimiser, for family "torch" (None where this torch lacks it)."""

    name: str
    family: str
    summary: str
    reads: tuple[str, ...] = ()
    normalize: tuple = (None,)
    torch_class: type | None = None


# the momentum of the steepest-descent rules: β, Nesterov's or not, on the gradient or the
# direction (`optim.steepest`)
MOMENTUM_FIELDS = ("momentum", "nesterov", "momentum_on")

# name → Rule; the order is the order error messages list them in.
RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        Rule("gd", "mirror", "gradient descent; normalize='loss': steps η/L (NGD paper eq. 13)",
             normalize=(None, "loss")),
        Rule("md", "mirror", "ℓp mirror descent, potential ‖·‖_p^p/p", ("p",),
             (None, "per_tensor", "global", "loss")),
        Rule("ngd", "mirror", "normalized GD (with momentum: NGD-mom; on minibatches: SNGD)",
             ("momentum",), ("global", "per_tensor")),
        Rule("polyak", "mirror", "Polyak step capped at lr = γ_b (on minibatches: SPS)",
             ("c", "f_star")),
        Rule("sign", "steepest", "SignGD: steepest descent in ℓ∞", MOMENTUM_FIELDS),
        Rule("spectral", "steepest", "steepest descent in the spectral norm",
             (*MOMENTUM_FIELDS, "method")),
        Rule("steepest", "steepest", "steepest descent in ℓp, p = norm",
             (*MOMENTUM_FIELDS, "norm")),
        Rule("adam", "torch", "torch's Adam", ("options", "lr_decay"),
             torch_class=torch.optim.Adam),
        # torch.optim.Muon exists from torch 2.9 on; with an older torch it is refused by name.
        Rule("muon", "torch", "torch's Muon", ("options", "lr_decay"),
             torch_class=getattr(torch.optim, "Muon", None)),
        Rule("sgd", "torch", "torch's SGD (momentum, weight decay as options)",
             ("options", "lr_decay"), torch_class=torch.optim.SGD),
    )
}  # fmt: skip

# Views of RULES under the names the engine and older code use.
OPTIMIZERS = tuple(RULES)
FAMILY = {name: rule.family for name, rule in RULES.items()}
NORMALIZE = {name: rule.normalize for name, rule in RULES.items()}
TORCH_OPTIMIZERS = {
    name: rule.torch_class for name, rule in RULES.items() if rule.torch_class is not None
}
# Fields that only some optimisers read; giving them to another is a config mistake.
ONLY_FOR = {
    key: tuple(name for name, rule in RULES.items() if key in rule.reads)
    for key in (
        "p",
        "momentum",
        "nesterov",
        "momentum_on",
        "c",
        "f_star",
        "norm",
        "method",
        "options",
        "lr_decay",
    )
}


def available(optimizer: str) -> bool:
    """Whether this torch has the optimiser (all but torch's Muon always do)."""
    return optimizer in TORCH_OPTIMIZERS or FAMILY.get(optimizer) != "torch"


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


def keyed_tables(tables, optimizer_tables: bool = False):
    """Config tables (`[[algorithms]]`, or `[[optimizers]]` with `optimizer_tables`) as
    results are keyed by them: as written, except a normalisation given as true, written as
    the mode it means (`NORMALIZE_TRUE`). True meant "per_tensor" before, so a run stored then
    must not be found under a key that now means "global". Anything else is left as it is
    (the tables were validated already)."""
    if not isinstance(tables, (list, tuple)):
        return tables
    out = []
    for table in tables:
        if isinstance(table, Mapping):
            spelling = TABLE_NAMES.get(table.get("name")) if optimizer_tables else None
            keys = spelling.keys if spelling else {"normalize": "normalize"}
            table = {
                k: NORMALIZE_TRUE if v is True and keys.get(k) == "normalize" else v
                for k, v in table.items()
            }
        out.append(table)
    return out


class FieldError(ValueError):
    """A bad field of a table; the message starts with the field's name (the caller puts where
    the table is in front: "algorithms[0].momentum applies only to ...")."""


@dataclass(frozen=True)
class Algorithm:
    """One optimiser with its hyper-parameters.

    name: label in figures and tables.  optimizer: "gd", "md" (ℓp mirror descent), "ngd"
    (normalized GD), "polyak" (capped Polyak step), "sign" (SignGD), "spectral"
    (SpectralDescent), "steepest" (ℓp SteepestDescent), or torch's own "adam", "muon" and
    "sgd" (`RULES`).
    lr: the step size η (for "polyak" the cap γ_b).  p: mirror exponent ("md").  normalize:
    one of the rule's NORMALIZE modes; True is "global" (the papers' ‖∇L‖ over all
    parameters, as in MirrorDescent), False is None (plain).  momentum: β ("ngd" and the
    steepest-descent ones).  nesterov, momentum_on: the steepest-descent ones' momentum,
    Nesterov's as torch.optim.SGD(nesterov=True) takes it, and on the raw gradient
    ("gradient", Muon's order) or on the direction ("direction", NGD-mom's order)
    (`optim.steepest`); either needs momentum > 0.  c, f_star: Polyak's constant and
    optimal loss L*, a number or "optimal" (the loss with all attention on the optimal
    tokens under the fixed head).
    norm: the ℓp exponent of "steepest", in (1, ∞].  method: "svd" or "newton-schulz"
    ("spectral").  options: further keyword arguments of torch's Adam, Muon or SGD (a table;
    e.g. eps, betas, momentum, weight_decay), passed as they are.  lr_decay: a in [0, 1],
    torch's optimisers only: step t = 0, 1, … uses
    η_t = lr·(t + 1)^(−a) (`lr_at`; 0: a constant rate).
    """

    name: str
    optimizer: str
    lr: float
    p: float = 2.0
    normalize: str | bool | None = "default"  # default: the optimiser's first NORMALIZE mode
    momentum: float = 0.0
    nesterov: bool = False
    momentum_on: str = "gradient"
    c: float = 1.0
    f_star: float | str = 0.0
    norm: float = 2.0
    method: str = "svd"
    options: dict | None = None
    lr_decay: float = 0.0

    def __post_init__(self):
        try:
            self._check()
        except FieldError as err:
            raise ValueError(f"algorithm {self.name!r}: {err}") from None

    def _check(self):
        """Validate and normalise the fields; errors name the field first."""
        if not isinstance(self.name, str) or not self.name:
            raise FieldError(f"name must be a non-empty string, got {self.name!r}")
        opt = self.optimizer
        if opt not in OPTIMIZERS:
            raise FieldError(f"optimizer must be one of {OPTIMIZERS}, got {opt!r}")
        for key, users in ONLY_FOR.items():
            if opt not in users and getattr(self, key) != _DEFAULTS[key]:
                raise FieldError(f"{key} applies only to optimizer {' or '.join(users)}")
        _number(self, "lr", low=0.0, include_low=False)
        _number(self, "p", low=1.0, include_low=False)
        _number(self, "momentum", low=0.0, high=1.0, include_high=False)
        _number(self, "c", low=0.0, include_low=False)
        _number(self, "lr_decay", low=0.0, high=1.0)  # a > 1: Σ η_t is finite, W stops
        if not isinstance(self.nesterov, bool):
            raise FieldError(f"nesterov must be true or false, got {self.nesterov!r}")
        if self.momentum_on not in MOMENTUM_ON:
            raise FieldError(f"momentum_on must be one of {MOMENTUM_ON}, got {self.momentum_on!r}")
        if self.momentum == 0.0 and (self.nesterov or self.momentum_on != "gradient"):
            key = "nesterov" if self.nesterov else "momentum_on"
            raise FieldError(f"{key} needs momentum > 0")
        if self.f_star != "optimal":
            _number(self, "f_star")
        if self.norm == "inf":  # as to_dict writes ∞ for JSON
            object.__setattr__(self, "norm", math.inf)
        _number(self, "norm", low=1.0, include_low=False, allow_inf=True)
        if self.method not in METHODS:
            raise FieldError(f"method must be one of {METHODS}, got {self.method!r}")
        if opt in TORCH_OPTIMIZERS:  # (Muon's options cannot be checked without Muon)
            self._check_options()
        # As in MirrorDescent and NormalizedGD: False is plain, True the papers' global norm.
        normalize = {"default": NORMALIZE[opt][0], False: None}.get(self.normalize, self.normalize)
        normalize = NORMALIZE_TRUE if normalize is True else normalize
        if normalize not in NORMALIZE[opt]:
            raise FieldError(
                f"normalize must be one of {NORMALIZE[opt]} for optimizer {opt!r}, "
                f"got {self.normalize!r}"
            )
        object.__setattr__(self, "normalize", normalize)

    def _check_options(self):
        """options must be keywords of the torch optimiser it builds (tried on a dummy)."""
        options = {} if self.options is None else self.options
        if not isinstance(options, dict):
            raise FieldError(f"options must be a table, got {type(options).__name__}")
        if "lr" in options:
            raise FieldError("options.lr: give the step size as the algorithm's lr")
        options = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
        try:
            TORCH_OPTIMIZERS[self.optimizer]([torch.zeros(1, 1)], lr=self.lr, **options)
        except (TypeError, ValueError) as err:
            raise FieldError(
                f"options are not accepted by torch's {self.optimizer}: {err}"
            ) from None
        object.__setattr__(self, "options", options)

    @classmethod
    def parse(cls, spec) -> Algorithm:
        """Build from an `[[algorithms]]` table: FieldError (naming the field first) for a bad
        field, ValueError when spec is not a table."""
        if not isinstance(spec, Mapping):
            raise ValueError(f"must be a table, got {type(spec).__name__}")
        known = [f.name for f in fields(cls)]
        for key in spec:
            if key not in known:
                raise FieldError(f"{key} is not a field; known: {', '.join(known)}")
        for key in ("name", "optimizer", "lr"):
            if key not in spec:
                raise FieldError(f"{key} is missing")
        algorithm = object.__new__(cls)
        for f in fields(cls):
            object.__setattr__(algorithm, f.name, spec.get(f.name, f.default))
        algorithm._check()
        return cls(**{f.name: getattr(algorithm, f.name) for f in fields(cls)})

    @classmethod
    def from_dict(cls, spec: dict, where: str = "algorithm") -> Algorithm:
        """Build from a config table; every error names the offending field as where.field."""
        try:
            return cls.parse(spec)
        except FieldError as err:
            raise ValueError(f"{where}.{err}") from None
        except ValueError as err:
            raise ValueError(f"{where} {err}") from None

    @classmethod
    def from_optimizer_table(cls, table: Mapping) -> Algorithm:
        """Build from an `[[optimizers]]` table of the real-data experiments ({"name": "sps",
        "lr_max": 0.3, "c": 2.0}: names and keys as in `TABLE_NAMES`); its name is the
        table's display label (SGD, SNGD, SPS, Adam, ℓ1.1-MD). ValueError naming the bad key."""
        if not isinstance(table, Mapping):
            raise ValueError(f"optimizer must be a table, got {type(table).__name__}")
        table = dict(table)
        name = table.pop("name", None)
        if name not in TABLE_NAMES:
            raise ValueError(f"optimizer.name must be one of {sorted(TABLE_NAMES)}, got {name!r}")
        spelling = TABLE_NAMES[name]
        if unknown := set(table) - set(spelling.keys):
            raise ValueError(
                f"optimizer {name!r} has no field(s) {sorted(unknown)}; "
                f"allowed {sorted(spelling.keys)}"
            )
        if missing := set(spelling.required) - set(table):
            raise ValueError(f"optimizer {name!r} needs field(s) {sorted(missing)}")
        spec, options = {"optimizer": spelling.rule}, {}
        for key, value in table.items():
            target = spelling.keys[key]
            if target.startswith("options."):
                options[target.removeprefix("options.")] = value
            else:
                spec[target] = value
        if options:
            spec["options"] = options
        try:
            algorithm = cls.parse({"name": name, **spec})
        except FieldError as err:
            raise ValueError(f"optimizer {name!r}: {err}") from None
        return replace(algorithm, name=spelling.label.format(**asdict(algorithm)))

    def to_dict(self) -> dict:
        """The fields this optimiser reads (the inverse of from_dict)."""
        out = {
            k: v
            for k, v in asdict(self).items()
            if v is not None and self.optimizer in ONLY_FOR.get(k, OPTIMIZERS)
        }
        for key in ("lr_decay", "nesterov", "momentum_on"):
            if key in out and out[key] == _DEFAULTS[key]:  # runs stored before them keep keys
                del out[key]
        if "norm" in out and math.isinf(out["norm"]):
            out["norm"] = "inf"  # JSON has no infinity
        return out

    def lr_at(self, t: int) -> float:
        """The step size of step t = 0, 1, …: lr·(t + 1)^(−lr_decay)."""
        return self.lr * (t + 1.0) ** -self.lr_decay if self.lr_decay else self.lr

    def schedule(self, optimizer, t: int) -> None:
        """Set the step size of every parameter group of `optimizer` (one this algorithm
        built) to that of step t, before that step; a constant rate is left as it is."""
        if self.lr_decay:
            for group in optimizer.param_groups:
                group["lr"] = self.lr_at(t)

    @property
    def momentum_keywords(self) -> dict:
        """The steepest-descent optimisers' momentum keywords (`optim.steepest`)."""
        return {"nesterov": self.nesterov, "momentum_on": self.momentum_on}

    @property
    def family(self) -> str:
        """Which update core steps it in the engine (FAMILY)."""
        return FAMILY[self.optimizer]

    @property
    def rule(self) -> str:
        """The step rule of the update core (`attnbias.optim.functional.RULES`)."""
        return "polyak" if self.optimizer == "polyak" else self.normalize or "none"

    @property
    def mirror_p(self) -> float:
        """Exponent of the mirror potential: 2 (Euclidean) unless this is ℓp mirror descent."""
        return self.p if self.optimizer == "md" else 2.0

    def torch_optimizer(self, params, f_star: float | None = None):
        """The `attnbias.optim` optimiser this algorithm is, for one model's parameters.

        With normalize="loss" the caller divides lr by the loss before each step (see
        `engine.single_run`). `f_star` is the resolved L* for "polyak" (default: the
        algorithm's own f_star, which must then be a number)."""
        if f_star is None and self.optimizer == "polyak":
            if self.f_star == "optimal":
                raise ValueError(
                    f"algorithm {self.name!r}: f_star 'optimal' needs the problem's optimal "
                    "loss; pass f_star"
                )
            f_star = self.f_star
        if self.optimizer == "ngd":
            return NormalizedGD(params, self.lr, self.momentum, self.normalize)
        if self.optimizer == "polyak":
            return PolyakStep(params, self.lr, f_star=f_star, c=self.c)
        if self.optimizer == "sign":
            return SignGD(params, self.lr, self.momentum, **self.momentum_keywords)
        if self.optimizer == "spectral":
            return SpectralDescent(params, self.lr, self.momentum, self.method,
                                   **self.momentum_keywords)  # fmt: skip
        if self.optimizer == "steepest":
            return SteepestDescent(params, self.lr, self.norm, self.momentum,
                                   **self.momentum_keywords)  # fmt: skip
        if not available(self.optimizer):
            raise ValueError(
                f"algorithm {self.name!r}: optimizer {self.optimizer!r} needs torch.optim.Muon "
                f"(torch >= 2.9); this torch is {torch.__version__}: upgrade torch or leave it out"
            )
        if self.optimizer in TORCH_OPTIMIZERS:
            return TORCH_OPTIMIZERS[self.optimizer](params, lr=self.lr, **self.options)
        normalize = False if self.normalize in (None, "loss") else self.normalize
        return MirrorDescent(params, self.lr, self.mirror_p, normalize)


_DEFAULTS = {
    "p": 2.0,
    "momentum": 0.0,
    "nesterov": False,
    "momentum_on": "gradient",
    "c": 1.0,
    "f_star": 0.0,
    "norm": 2.0,
    "method": "svd",
    "options": None,
    "lr_decay": 0.0,
}


def _number(algorithm: Algorithm, name: str, **bounds) -> None:
    """Check a numeric field with the package's one scalar check; a config error either way."""
    try:
        value = check_scalar(getattr(algorithm, name), name, **bounds)
    except TypeError as err:
        raise FieldError(str(err)) from None
    except ValueError as err:
        raise FieldError(str(err)) from None
    object.__setattr__(algorithm, name, float(value))
