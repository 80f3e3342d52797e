"""Typed experiment configs: each experiment's config is a frozen pydantic model, built once
from its TOML defaults, a [quick] or [paper] table and the overrides (`resolve`), with every
rule, cross-field ones included, checked then. Downstream code reads attributes (algorithms as
`Algorithm`, norms as `Norm`) and never re-parses a string; a bad config is refused in one line
naming the file, the field, the value and the rule.

A config serialises (`to_dict`) to exactly the JSON the experiment's results are keyed by
(`store.config_key`): typed values for numbers and lists, and the tables that are parsed into
value objects (algorithms, norms, seeds) as they were written.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import stat
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    Strict,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from ._validate import check_nesting, check_scalar
from .metrics import Norm
from .norm_names import allowed_norms, norm_names
from .optim.algorithm import Algorithm, FieldError, keyed_tables
from .optim.registry import RULES, TABLE_NAMES


class ConfigError(ValueError):
    """A config that breaks a rule; the message is one line naming the file (when there is
    one), the experiment, the field, the value and the rule."""


class AsWritten:
    """Marks a field whose value is parsed into value objects but stored (`to_dict`) as the
    config wrote it, so that the results keyed by the config keep their keys. `keyed`: applied
    to what was written, where a spelling's meaning changed (so that its key changes too)."""

    def __init__(self, keyed=None):
        self.keyed = keyed

    def stored(self, value):
        return value if self.keyed is None else self.keyed(value)


AS_WRITTEN = AsWritten()


# --- scalar types: the package's one scalar check (a bool is not a number; NaN, ±inf refused)


def _scalar(kind: type):
    def check(value):
        try:
            return check_scalar(value, "", kind)
        except TypeError as err:  # pydantic reports ValueErrors; the message says the type
            raise ValueError(str(err).strip()) from None

    return check


# Every config integer is at most this unless its field says otherwise: integers feed sizes,
# counts and seeds, and beyond int32 they only end in OverflowError or memory exhaustion
# (after training, where a step grid or a tensor is made of them).
MAX_INT = 2**31 - 1


def integer(**bounds) -> Any:
    """An int (1.0 is 1), with pydantic bounds (ge=, gt=, ...; le=MAX_INT unless given)."""
    if "le" not in bounds and "lt" not in bounds:
        bounds["le"] = MAX_INT
    return Annotated[int, Field(**bounds), BeforeValidator(_scalar(int))]


def real(**bounds) -> Any:
    """A finite float (an int is converted), with pydantic bounds."""
    return Annotated[float, Field(**bounds), BeforeValidator(_scalar(float))]


PositiveInt = integer(ge=1)
NonNegativeInt = integer(ge=0)
# tokens per sample: an Att-SVM constrains the selected token against at least one other
Tokens = integer(ge=2)
Positive = real(gt=0)
NonNegative = real(ge=0)
Fraction = real(ge=0, lt=1)  # in [0, 1)
Text = Annotated[str, Strict()]
Flag = Annotated[bool, Strict()]
Loss = Literal["logistic", "exponential", "correlation"]
Device = Literal["auto", "cpu", "cuda"]


def numbers(kind: type, minimum: float, strict: bool = False) -> Any:
    """A non-empty list of numbers ≥ minimum (> minimum if strict)."""
    rule = f"a non-empty list of {kind.__name__}s {'>' if strict else '>='} {minimum:g}"

    def check(values: tuple) -> tuple:
        if not values or not all(v > minimum if strict else v >= minimum for v in values):
            raise ValueError(f"must be {rule}, got {list(values)!r}")
        return values

    item = integer() if kind is int else real()
    return Annotated[tuple[item, ...], AfterValidator(check)]


def choices(*options: str) -> Any:
    """A non-empty list of options."""

    def check(values: tuple) -> tuple:
        if not values or not set(values) <= set(options):
            raise ValueError(f"must be a non-empty list from {options}, got {list(values)!r}")
        return values

    return Annotated[
        tuple[Text, ...],
        AfterValidator(check),
        WithJsonSchema({"type": "array", "items": {"enum": list(options)}, "minItems": 1}),
    ]


def _non_empty(values: tuple) -> tuple:
    if not values:
        raise ValueError("must be a non-empty list")
    return values


def _cap(value):
    """Polyak's cap γ_b: ∞ as TOML's inf or "inf" (as JSON keeps it), else a finite number."""
    if value == "inf" or (isinstance(value, float) and value == math.inf):
        return math.inf
    return _scalar(float)(value)


def _keyed_caps(values):
    """Caps as results are keyed by them: ∞ written "inf" (JSON has no ∞; one key for both)."""
    if not isinstance(values, (list, tuple)):
        return values
    return ["inf" if isinstance(v, float) and v == math.inf else v for v in values]


# Polyak's caps γ_b > 0, ∞ (uncapped, exact: `optim.divisors.polyak_log_step`) among them
Caps = Annotated[
    tuple[Annotated[float, Field(gt=0), BeforeValidator(_cap)], ...],
    AfterValidator(_non_empty),
    AsWritten(_keyed_caps),
    WithJsonSchema(
        {"type": "array", "items": {"anyOf": [{"type": "number"}, {"const": "inf"}]}, "minItems": 1}
    ),
]


# --- value objects: algorithms, optimiser tables, norms, seed lists


def _algorithm(table) -> Algorithm:
    return Algorithm.parse(table)  # FieldError / ValueError: reported with the table's place


def _distinct_names(algorithms: tuple) -> tuple:
    names = [a.name for a in algorithms]
    if len(set(names)) != len(names):
        raise ValueError(f"must have distinct names, got {names}")
    return algorithms


ALGORITHM_SCHEMA = {
    "type": "object",
    "description": "an optimiser: name (a label), optimizer (a rule of "
    "attnbias.optim.registry.RULES), lr and the rule's own hyper-parameters",
    "properties": {
        "name": {"type": "string"},
        "optimizer": {"enum": list(RULES)},
        "lr": {"type": "number", "exclusiveMinimum": 0},
        "p": {"type": "number", "exclusiveMinimum": 1},
        "normalize": {"type": ["string", "boolean", "null"]},
        "momentum": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
        "c": {"type": "number", "exclusiveMinimum": 0},
        "f_star": {"type": ["number", "string"]},
        "norm": {"type": ["number", "string"]},
        "method": {"type": "string"},
        "options": {"type": "object"},
        "lr_decay": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["name", "optimizer", "lr"],
    "additionalProperties": False,
}
AlgorithmTable = Annotated[
    Algorithm,
    PlainValidator(_algorithm),
    PlainSerializer(Algorithm.to_dict),
    WithJsonSchema(ALGORITHM_SCHEMA),
]
Algorithms = Annotated[
    tuple[AlgorithmTable, ...],
    AfterValidator(_non_empty),
    AfterValidator(_distinct_names),
    AsWritten(keyed_tables),
]


def _optimizer(table) -> Algorithm:
    return Algorithm.from_optimizer_table(table)


OptimizerTable = Annotated[
    Algorithm,
    PlainValidator(_optimizer),
    PlainSerializer(Algorithm.to_dict),
    WithJsonSchema(
        {
            "type": "object",
            "description": "an optimiser of the real-data loop: name (one of "
            f"{sorted(TABLE_NAMES)}) and its keys (attnbias.optim.registry.TABLE_NAMES)",
            "properties": {"name": {"enum": sorted(TABLE_NAMES)}},
            "required": ["name"],
        }
    ),
]
OptimizerTables = Annotated[
    tuple[OptimizerTable, ...],
    AfterValidator(_non_empty),
    AfterValidator(_distinct_names),
    AsWritten(partial(keyed_tables, optimizer_tables=True)),
]


def _norm(value) -> Norm:
    try:
        return Norm.parse(value, "norm")
    except (TypeError, ValueError):
        raise ValueError(f"must be a norm ({allowed_norms()}), got {value!r}") from None


NormName = Annotated[
    Norm,
    PlainValidator(_norm),
    PlainSerializer(lambda norm: norm.value),
    WithJsonSchema({"anyOf": [{"type": "number", "minimum": 1}, {"enum": list(norm_names())}]}),
]
Norms = Annotated[tuple[NormName, ...], AfterValidator(_non_empty), AS_WRITTEN]


def _seed_ids(value) -> int | tuple[int, ...]:
    def is_int(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    if is_int(value) and 1 <= value <= MAX_INT:
        return value
    if isinstance(value, (list, tuple)) and value and all(map(is_int, value)):
        if all(abs(v) <= MAX_INT for v in value):
            return tuple(value)
    raise ValueError(
        f"must be a positive int or a non-empty list of ints, each at most {MAX_INT} in size, "
        f"got {value!r}"
    )


SeedIds = Annotated[
    int | tuple[int, ...],
    PlainValidator(_seed_ids),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 1},
                {"type": "array", "items": {"type": "integer"}, "minItems": 1},
            ]
        }
    ),
    AS_WRITTEN,
]


# --- the base model


def plain(value):
    """value with tuples as lists and value objects as they serialise: JSON-able Python."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


class ExperimentConfig(BaseModel):
    """An experiment's resolved config: frozen, every field typed and checked at load time.

    Subclasses declare the fields (each with a description: it is the JSON schema's and the
    error message's) and the cross-field rules (`model_validator(mode="after")`, raising
    ValueError with the rule). `to_dict()` is the JSON the results are keyed by; the config
    also reads as a mapping of it (`config["seeds"]`, `{**config}`) for code written against
    the dict configs of earlier releases."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    experiment: Text = Field(description="the experiment: its name or module:attribute")
    _written: dict = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_written(cls, data, handler):
        config = handler(data)
        if isinstance(data, Mapping):
            config._written = {
                name: marker.stored(copy.deepcopy(data[name]))
                for name, info in cls.model_fields.items()
                for marker in info.metadata
                if isinstance(marker, AsWritten) and name in data
            }
        return config

    def to_dict(self) -> dict:
        """The config as JSON-able Python: what config.json holds and config_key hashes."""
        dumped = self.model_dump()
        out = {
            name: copy.deepcopy(self._written[name]) if name in self._written else dumped[name]
            for name in type(self).model_fields
        }
        return plain({**out, **(self.model_extra or {})})

    def as_written(self, name: str):
        """A field as the config wrote it (a copy): what results are keyed by, where the typed
        value differs (e.g. the tables that make `algorithms`, the norm names of `norms`)."""
        return self.to_dict()[name]

    # A read-only mapping view of to_dict() (dict configs of earlier releases).
    def keys(self):
        return self.to_dict().keys()

    def __getitem__(self, key: str):
        return self.to_dict()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.to_dict()

    def get(self, key: str, default=None):
        return self.to_dict().get(key, default)


class LooseConfig(ExperimentConfig):
    """The config of an experiment that declares no Config model: any fields, unchecked."""

    model_config = ConfigDict(frozen=True, extra="allow")


# --- cross-field rules


def check_named(config: ExperimentConfig, fields: Sequence[str]) -> None:
    """Fields that name an algorithm must name one of config.algorithms."""
    names = [a.name for a in config.algorithms]
    for field in fields:
        value = getattr(config, field)
        if value not in names:
            raise ValueError(f"{field} {value!r} is not one of the algorithms {names}")


def algorithm_named(config: ExperimentConfig, name: str) -> Algorithm | None:
    """The algorithm of config.algorithms called `name`; None if there is none (names are
    distinct: `_distinct_names`)."""
    return next((a for a in config.algorithms if a.name == name), None)


def check_paired(config: ExperimentConfig, field: str, other: str) -> None:
    """config.field must have one entry per entry of config.other."""
    values, others = getattr(config, field), getattr(config, other)
    if len(values) != len(others):
        raise ValueError(
            f"{field} must have one entry per entry of {other} ({len(others)}), "
            f"got {list(values)!r}"
        )


# --- building a config


def resolve(
    model: type[ExperimentConfig], experiment: str, layers: Sequence[tuple[str | None, Mapping]]
) -> ExperimentConfig:
    """The config of `experiment` made of the layers, later ones overriding earlier ones: each
    (origin, fields), origin naming where the fields come from (a file, a command-line option;
    None for Python overrides); fields whose value is None are skipped. ConfigError, naming the
    origin of the bad field, if a rule is broken."""
    merged, origin = {}, {}
    for source, fields in layers:
        for key, value in fields.items():
            if value is not None:
                merged[key], origin[key] = value, source
    merged["experiment"] = experiment
    try:
        return model.model_validate(merged)
    except ValidationError as err:
        # a rule across fields: the last layer that set any, unless it is a command-line option
        files = [s for s, fields in layers if fields and not (s or "").startswith("--")]
        main = files[-1] if files else None
        raise ConfigError(describe_error(err, experiment, model, origin, main, merged)) from None


def describe_error(
    err: ValidationError,
    experiment: str,
    model,
    origin: dict,
    main: str | None,
    given: Mapping | None = None,
) -> str:
    """The first error of a validation as one line: "ORIGIN: EXPERIMENT: FIELD must be RULE,
    got VALUE" (ORIGIN: where the field was set; for a rule across fields, `main`; VALUE as
    `given` holds it)."""
    first = err.errors()[0]
    first["input"] = _given(given, first["loc"], first["input"])
    loc = first["loc"]
    field = loc[0] if loc else None
    where = origin.get(field, main) if field is not None else main
    prefix = f"{where}: " if where else ""
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{prefix}{experiment}: {_message(first, model)}{more}"


_BOUNDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
_TYPES = {
    "string_type": "a string",
    "bool_type": "true or false",
    "dict_type": "a table",
    "list_type": "a list",
    "tuple_type": "a list",
    "int_type": "an integer",
    "float_type": "a real number",
}


def _message(error: dict, model) -> str:
    kind, loc, ctx = error["type"], error["loc"], error.get("ctx") or {}
    place = _place(loc)
    if kind == "missing":
        info = model.model_fields.get(loc[0]) if loc else None
        help = f" ({info.description})" if info is not None and info.description else ""
        return f"config field {place!r} is missing{help}"
    if kind == "extra_forbidden":
        known = ", ".join(n for n in model.model_fields if n != "experiment")
        return f"unknown config field {place!r}; known fields: {known}"
    if kind == "value_error":
        cause = ctx.get("error")
        text = str(cause) if cause is not None else error["msg"]
        if isinstance(cause, FieldError):  # a field of a table: algorithms[0].momentum ...
            return f"{place}.{text}"
        return f"{place} {text}" if place else text
    bound = next((k for k in _BOUNDS if k in ctx), None)
    if bound is not None:
        limit = ctx[bound]  # an int bound in full: 2147483647, not 2.14748e+09
        rule = f"{_BOUNDS[bound]} {limit if isinstance(limit, int) else format(limit, 'g')}"
    elif kind == "literal_error":
        rule = f"one of {ctx.get('expected')}"
    else:
        rule = _TYPES.get(kind, error["msg"])
    return f"{place} must be {rule}, got {error['input']!r}"


def _given(given, loc: tuple, default):
    """The value at loc in the input as written (the error's own input is after conversion)."""
    value = given
    for part in loc:
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            return default
    return value if loc and given is not None else default


def _place(loc: tuple) -> str:
    """("steps", 1) → "steps[1]", ("own_norm", "NGD") → "own_norm.NGD"."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


# --- TOML in: bounded before parsing (a config file may come from anyone)

MAX_TOML_BYTES = 10**6  # the largest built-in config is 2 kB
MAX_TOML_NESTING = 32  # tables of lists of tables: a handful of levels


def read_toml(path: str | os.PathLike) -> dict:
    """The tables of a TOML file, read only if it is a regular file of at most MAX_TOML_BYTES
    nesting at most MAX_TOML_NESTING deep (checked before tomllib, which recurses once a
    level); ValueError naming the file otherwise."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
    except FileNotFoundError:
        raise ValueError(f"config file {path} does not exist") from None
    except OSError as err:
        raise ValueError(f"config file {path} cannot be read ({err.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"config file {path} is not a regular file")
        data = f.read(MAX_TOML_BYTES + 1)
    if len(data) > MAX_TOML_BYTES:
        raise ValueError(f"config file {path} is larger than {MAX_TOML_BYTES:,} bytes")
    try:
        text = data.decode()
    except UnicodeDecodeError as err:
        raise ValueError(f"config file {path} is not UTF-8 text ({err.reason})") from None
    check_nesting(text, f"config file {path}", MAX_TOML_NESTING)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"config file {path} is not valid TOML: {err}") from err


# --- TOML out (tomllib only reads)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def to_toml(config: Mapping) -> str:
    """A TOML document holding `config` (scalars, lists, tables and lists of tables), which
    tomllib reads back as the same values; `attnbias run` takes it."""
    head, tables = [], []
    for key, value in config.items():
        if isinstance(value, Mapping):
            tables += [
                "",
                f"[{_key(key)}]",
                *(f"{_key(k)} = {_value(v)}" for k, v in value.items()),
            ]
        elif (
            isinstance(value, (list, tuple))
            and value
            and all(isinstance(v, Mapping) for v in value)
        ):
            for table in value:
                tables += ["", f"[[{_key(key)}]]"]
                tables += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
        else:
            head.append(f"{_key(key)} = {_value(value)}")
    return "\n".join(head + tables) + "\n"


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".en") else f"{text}.0"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if value is None:
        raise ValueError("TOML has no null; leave the field out")
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as TOML")


# --- earlier releases

# The dict schema of earlier releases (a Field per config key) became pydantic models.
REPLACED = {
    "Field": "pydantic.Field on an ExperimentConfig subclass",
    "validate": "resolve (or experiment_registry.load_config / validate_config)",
    "positive_int": "PositiveInt",
    "non_negative_int": "NonNegativeInt",
    "positive": "Positive",
    "fraction": "Fraction",
    "choice": "typing.Literal",
    "named_tables": "OptimizerTables",
    "seed_ids": "SeedIds",
    "algorithms": "Algorithms",
    "LOSS": "Loss",
    "ZERO_OR_RANDOM_INIT": "NonNegative (experiments.runs.ZERO_OR_RANDOM_INIT)",
    "GAUSSIAN_UNIT": "experiment_configs.sweep.GaussianUnitConfig",
    "COMMON": "experiment_configs.sweep.SweepConfig",
}


def __getattr__(name: str):
    if name in REPLACED:
        raise AttributeError(
            f"attnbias.config.{name} was the dict schema of earlier releases; configs are "
            f"pydantic models now: use {REPLACED[name]} (docs/ARCHITECTURE.md)"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
