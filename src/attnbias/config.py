"""Config validation: every experiment declares its fields; a bad config is refused with a
message that names the field (unknown, missing, wrong type or out of range)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._validate import check_scalar
from .engine import Algorithm


@dataclass(frozen=True)
class Field:
    """type: int, float, str, bool, list (of `item`) or object (any value: `check` decides);
    check/rule: a further condition and how to state it; parse: a deeper check that raises
    ValueError naming what is wrong."""

    type: type
    help: str = ""
    item: type | None = None
    check: Callable[[Any], bool] | None = None
    rule: str = ""
    parse: Callable[[Any, str], Any] | None = None


def positive_int(help: str) -> Field:
    return Field(int, help, check=lambda x: x >= 1, rule=">= 1")


def non_negative_int(help: str) -> Field:
    return Field(int, help, check=lambda x: x >= 0, rule=">= 0")


def positive(help: str) -> Field:
    return Field(float, help, check=lambda x: x > 0, rule="> 0")


def fraction(help: str) -> Field:
    return Field(float, help, check=lambda x: 0 <= x < 1, rule="in [0, 1)")


def numbers(help: str, item: type, minimum: float, strict: bool = False) -> Field:
    """A non-empty list of numbers ≥ minimum (> minimum if strict)."""
    rule = f"a non-empty list of {item.__name__}s {'>' if strict else '>='} {minimum:g}"
    above = (lambda x: x > minimum) if strict else (lambda x: x >= minimum)
    return Field(list, help, item=item, check=lambda x: bool(x) and all(map(above, x)), rule=rule)


def choice(help: str, *options) -> Field:
    return Field(str, help, check=lambda x: x in options, rule=f"one of {options}")


def choices(help: str, *options) -> Field:
    """A non-empty list of options."""
    rule = f"a non-empty list from {options}"
    return Field(
        list, help, item=str, check=lambda x: bool(x) and set(x) <= set(options), rule=rule
    )


def named_tables(help: str, names) -> Field:
    """A non-empty list of tables, each with a "name" among names."""
    return Field(
        list,
        help,
        item=dict,
        check=lambda x: bool(x) and all(t.get("name") in names for t in x),
        rule=f"a non-empty list of tables whose name is one of {sorted(names)}",
    )


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_seed_ids(x) -> bool:
    if isinstance(x, list):
        return bool(x) and all(map(_is_int, x))
    return _is_int(x) and x >= 1


def seed_ids(help: str) -> Field:
    """A count n (seeds 0 … n−1) or a non-empty list of seeds."""
    return Field(
        object, help, check=_is_seed_ids, rule="a positive int or a non-empty list of ints"
    )


def parse_algorithms(tables: list, name: str = "algorithms") -> list[Algorithm]:
    algorithms = [Algorithm.from_dict(t, f"{name}[{i}]") for i, t in enumerate(tables)]
    names = [a.name for a in algorithms]
    if len(set(names)) != len(names):
        raise ValueError(f"{name}: algorithm names must be distinct, got {names}")
    return algorithms


def algorithms(help: str) -> Field:
    return Field(list, help, item=dict, check=bool, rule="non-empty", parse=parse_algorithms)


# Fields every synthetic experiment takes (add them to its SCHEMA).
LOSS = choice("margin loss", "logistic", "exponential", "correlation")
ZERO_OR_RANDOM_INIT = Field(
    float,
    "W₀, v₀ entries ~ N(0, init_scale²); 0: zero init",
    check=lambda x: x >= 0,
    rule=">= 0",
)


def check_named(config: dict, fields: tuple[str, ...]) -> None:
    """Fields that name an algorithm must name one of config["algorithms"]."""
    names = [a["name"] for a in config["algorithms"]]
    for field in fields:
        if config[field] not in names:
            raise ValueError(
                f"{config['experiment']}: {field} {config[field]!r} is not one of {names}"
            )


def check_paired(config: dict, field: str, other: str) -> None:
    """config[field] must have one entry per entry of config[other]."""
    if len(config[field]) != len(config[other]):
        raise ValueError(
            f"{config['experiment']}: {field} must have one entry per entry of {other} "
            f"({len(config[other])}), got {config[field]!r}"
        )


# Fields of the experiments on gaussian_unit data from a random W₀ (md-local, atlas).
GAUSSIAN_UNIT = {
    "n": positive_int("samples"),
    "T": positive_int("tokens per sample"),
    "d": positive_int("dimension"),
    "loss": LOSS,
    "init_scale": positive("W₀ entries ~ N(0, init_scale²)"),
}

COMMON = {
    "seeds": positive_int("number of seeds: runs use seeds 1..seeds"),
    "grid_points": positive_int("log-spaced steps at which metrics are recorded"),
    "batch_size": non_negative_int("runs per batched program (0: all at once)"),
    "device": choice("where the engine runs ('auto': CUDA when present)", "auto", "cpu", "cuda"),
}


def _typed(value, kind: type, name: str):
    """The value as `kind`; numbers through the package's one scalar check (a bool is not a
    number, NaN and ±inf are refused). Every problem is a config error: ValueError."""
    if kind in (int, float):
        try:
            return check_scalar(value, name, kind, allow_tensor=False)
        except TypeError as err:
            raise ValueError(str(err)) from None
    if not isinstance(value, kind):
        raise ValueError(f"{name} must be of type {kind.__name__}, got {value!r}")
    return value


def validate(config: dict, schema: dict[str, Field], experiment: str) -> dict:
    """The config with its values typed (ints given for floats become floats); raises
    ValueError naming the first bad field. The result stays JSON-able."""
    allowed = schema
    for name in config:
        if name != "experiment" and name not in allowed:
            raise ValueError(
                f"{experiment}: unknown config field {name!r}; known fields: {', '.join(allowed)}"
            )
    out = {"experiment": experiment}
    for name, field in allowed.items():
        if name not in config:
            raise ValueError(f"{experiment}: config field {name!r} is missing ({field.help})")
        where = f"{experiment}: {name}"
        value = _typed(config[name], field.type, where)
        if field.item is not None:
            value = [_typed(x, field.item, f"{where}[{i}]") for i, x in enumerate(value)]
        if field.check is not None and not field.check(value):
            raise ValueError(f"{where} must be {field.rule}, got {value!r}")
        if field.parse is not None:
            field.parse(value, where)
        out[name] = value
    return out
