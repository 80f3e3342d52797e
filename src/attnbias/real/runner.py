"""Deprecated: the real-data experiment drivers moved to `attnbias.experiments.real_runs` (the
stored runs, the shared training loop, reading runs back) and the data adapters to
`attnbias.real.adapters`; this module forwards the old names for one release, with a
DeprecationWarning."""

from __future__ import annotations

import importlib
import warnings

MOVED = {
    **dict.fromkeys(("subset", "torch_device"), "attnbias.real.adapters"),
    "history_table": "attnbias.real.records",
    **dict.fromkeys(
        ("run_once", "train_and_store", "RemoteRun", "series", "mean_std", "smooth",
         "run_totals", "fmt"),
        "attnbias.experiments.real_runs",
    ),
}  # fmt: skip


def load_text(name: str, tokenizer, config, path: str | None = None):
    """Deprecated: attnbias.real.adapters.load_text with the sizes given one by one."""
    warnings.warn(
        "attnbias.real.runner.load_text moved to attnbias.real.adapters.load_text",
        DeprecationWarning,
        stacklevel=2,
    )
    from .adapters import load_text as load

    return load(name, tokenizer, config["train_size"], config["test_size"], config["max_len"], path)


def __getattr__(name: str):
    if name not in MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"attnbias.real.runner.{name} moved to {MOVED[name]}.{name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(MOVED[name]), name)
