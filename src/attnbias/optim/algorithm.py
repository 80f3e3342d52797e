"""`Algorithm`: one rule of the optimiser vocabulary (`optim.registry.RULES`) with its
hyper-parameters, as a value.

The batched engine steps an Algorithm for many runs at once, `torch_optimizer` builds the very
optimiser it is for one model (the real-data training loop, `engine.single_run`), and configs
name rules by these names: `[[algorithms]]` tables of the synthetic experiments directly
(`Algorithm.from_dict`), the `[[optimizers]]` tables of the real-data experiments by the
minibatch names of the NGD paper (SGD, SNGD, SPS; `TABLE_NAMES`,
`Algorithm.from_optimizer_table`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from .._validate import check_scalar
from .divisors import NORMALIZE_TRUE
from .registry import HYPER_FIELDS, RULES, TABLE_NAMES, UpdateRule, readers
from .steepest import METHODS, MOMENTUM_ON


def keyed_tables(tables, optimizer_tables: bool = False):
    """Config tables (`[[algorithms]]`, or `[[optimizers]]` with `optimizer_tables`) as
    results are keyed by them: as written, except a normalisation given as true, written as
    the mode it means (`NORMALIZE_TRUE`), and an infinite lr (Polyak's γ_b = ∞, TOML `inf`)
    as "inf", as `Algorithm.to_dict` writes it (JSON has no ∞; both spellings one key). True
    meant "per_tensor" before, so a run stored then must not be found under a key that now
    means "global". Anything else is left as it is (the tables were validated already)."""
    if not isinstance(tables, (list, tuple)):
        return tables
    out = []
    for table in tables:
        if isinstance(table, Mapping):
            spelling = TABLE_NAMES.get(table.get("name")) if optimizer_tables else None
            keys = spelling.keys if spelling else {"normalize": "normalize", "lr": "lr"}
            table = {k: keyed_value(keys.get(k), v) for k, v in table.items()}
        out.append(table)
    return out


def keyed_value(field: str | None, value):
    """A table's value as `keyed_tables` keys it (field: the Algorithm field it sets)."""
    if value is True and field == "normalize":
        return NORMALIZE_TRUE
    if field == "lr" and isinstance(value, float) and value == math.inf:
        return "inf"
    return value


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
    lr: the step size η (for "polyak" the cap γ_b, which may be ∞: uncapped, written "inf"
    in JSON, `inf` or "inf" in TOML).  p: mirror exponent ("md").  normalize:
    one of its rule's normalisations (`UpdateRule.normalize`); True is "global" (the papers' ‖∇L‖
    over all parameters, as in MirrorDescent), False is None (plain).  momentum: β ("ngd" and the
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
    normalize: str | bool | None = "default"  # default: its rule's first normalisation
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
        if not isinstance(opt, str) or opt not in RULES:
            raise FieldError(f"optimizer must be one of {tuple(RULES)}, got {opt!r}")
        rule = RULES[opt]
        for key in HYPER_FIELDS:
            if key not in rule.reads and getattr(self, key) != _DEFAULTS[key]:
                raise FieldError(f"{key} applies only to optimizer {' or '.join(readers(key))}")
        if rule.lr_is_cap and self.lr == "inf":  # as to_dict writes ∞ for JSON
            object.__setattr__(self, "lr", math.inf)
        _number(self, "lr", low=0.0, include_low=False, allow_inf=rule.lr_is_cap)
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
        if rule.torch_class is not None:  # (Muon's options cannot be checked without Muon)
            self._check_options(rule.torch_class)
        # As in MirrorDescent and NormalizedGD: False is plain, True the papers' global norm.
        modes = rule.normalize
        normalize = {"default": modes[0], False: None}.get(self.normalize, self.normalize)
        normalize = NORMALIZE_TRUE if normalize is True else normalize
        if normalize not in modes:
            raise FieldError(
                f"normalize must be one of {modes} for optimizer {opt!r}, got {self.normalize!r}"
            )
        object.__setattr__(self, "normalize", normalize)

    def _check_options(self, torch_class: type):
        """options must be keywords of the torch optimiser it builds (tried on an empty
        parameter list)."""
        options = {} if self.options is None else self.options
        if not isinstance(options, dict):
            raise FieldError(f"options must be a table, got {type(options).__name__}")
        if "lr" in options:
            raise FieldError("options.lr: give the step size as the algorithm's lr")
        options = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
        object.__setattr__(self, "options", options)
        if not options and torch_class.__module__.split(".")[:2] == ["torch", "optim"]:
            return  # torch's own take their defaults at any lr > 0 (checked above)
        # Checked on no parameters: a torch optimiser checks its options before its parameter
        # list, which it then refuses as empty; adding a parameter group would import
        # torch._dynamo (~2.5 s of CPU) in commands that never step one.
        empty = _refusal(torch_class, self.lr, {})
        refusal = _refusal(torch_class, self.lr, options)
        if refusal != empty:
            raise FieldError(f"options are not accepted by torch's {self.optimizer}: {refusal}")

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
            if v is not None and (k not in HYPER_FIELDS or k in self.rule.reads)
        }
        for key in ("lr_decay", "nesterov", "momentum_on"):
            if key in out and out[key] == _DEFAULTS[key]:  # runs stored before them keep keys
                del out[key]
        for key in ("norm", "lr"):
            if key in out and math.isinf(out[key]):
                out[key] = "inf"  # JSON has no infinity
        return out

    def lr_at(self, t: int) -> float:
        """The step size of step t = 0, 1, …: lr·(t + 1)^(−lr_decay)."""
        return self.lr * (t + 1.0) ** -self.lr_decay if self.lr_decay else self.lr

    def lr_sum(self, steps: int) -> float:
        """Σ of `lr_at(t)` over t = 0, …, steps − 1 (in one array: how far a normalised or
        sign-like method can move its weights in the run)."""
        if not self.lr_decay:
            return self.lr * steps
        return float(self.lr * np.sum(np.arange(1.0, steps + 1.0) ** -self.lr_decay))

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
    def rule(self) -> UpdateRule:
        """Its rule in the vocabulary (`optim.registry.RULES`)."""
        return RULES[self.optimizer]

    @property
    def family(self) -> str:
        """Which stepper of the engine advances it (`UpdateRule.family`)."""
        return self.rule.family

    @property
    def step_rule(self) -> str:
        """The mirror-descent core's step rule (`attnbias.optim.divisors.STEP_RULES`): the rule's
        own (Polyak's), else its normalisation."""
        return self.rule.core_rule or self.normalize or "none"

    @property
    def mirror_p(self) -> float:
        """Exponent of the mirror potential: p for a rule that reads it (ℓp mirror descent),
        else 2 (Euclidean)."""
        return self.p if "p" in self.rule.reads else 2.0

    @property
    def steepest_norm(self) -> float:
        """The ℓp exponent the steepest-descent core steps in: the rule's own (SignGD's ∞)
        or the algorithm's norm."""
        fixed = self.rule.fixed_norm
        return self.norm if fixed is None else fixed

    def torch_optimizer(self, params, f_star: float | None = None):
        """The optimiser this algorithm is, for one model's parameters (`UpdateRule.build`).

        With normalize="loss" the caller divides lr by the loss before each step (see
        `engine.single_run`). `f_star` is the resolved L* for a rule that reads it (Polyak's;
        default: the algorithm's own f_star, which must then be a number)."""
        return self.rule.build(self, params, f_star)


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


def _refusal(torch_class: type, lr: float, options: dict) -> str | None:
    """What `torch_class` says when built on an empty parameter list with these options: its
    refusal of the options, or of the empty list once they pass (None if it says nothing)."""
    try:
        torch_class([], lr=lr, **options)
    except (TypeError, ValueError) as err:
        return str(err)
    return None
