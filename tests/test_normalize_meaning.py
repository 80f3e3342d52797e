"""What `normalize` means, read from each optimiser's own docstring and checked against a step
computed by hand, so that the documentation and the code cannot drift apart again (issue 28: the
docstrings said True was "global", the papers' ‖∇L‖ over all parameters, while the code took
it as "per_tensor").

The example: two tensors at zero with gradients (3, 4) and (0, 1e-3), one step with lr = 1.
Per tensor each moves by a unit vector: the second to (0, −1). Globally both are divided by
‖(3, 4, 0, 1e-3)‖ = √25.000001: the second moves to (0, −0.0002). Plain: by the gradient."""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path

import pytest
import torch

from attnbias import optim
from attnbias.engine import Algorithm
from attnbias.experiment_registry import load_config
from attnbias.store import config_key

GRADS = ([3.0, 4.0], [0.0, 1e-3])
GLOBAL = math.sqrt(25.0 + 1e-6)
EXPECTED = {  # the two tensors after one step from zero, lr = 1, by hand
    "per_tensor": ([-0.6, -0.8], [0.0, -1.0]),
    "global": ([-3.0 / GLOBAL, -4.0 / GLOBAL], [0.0, -1e-3 / GLOBAL]),
    "none": ([-3.0, -4.0], [0.0, -1e-3]),
}
VALUE = r'(?:True|False|None|"[a-z_]+")'
# a documented choice: one or more spellings joined by " / ", then its meaning in parentheses
CHOICE = re.compile(rf"({VALUE}(?:\s*/\s*{VALUE})*)\s*\(([^()]*)")
OPTIMIZERS_MD = Path(__file__).resolve().parent.parent / "docs" / "OPTIMIZERS.md"


def takes_normalize() -> list[type]:
    classes = [getattr(optim, name) for name in optim.__all__]
    return [
        c for c in classes if inspect.isclass(c) and "normalize" in inspect.signature(c).parameters
    ]


def documented(cls: type) -> list[tuple[list, str, str]]:
    """(spellings, the mode they mean, their description) for each choice the class's
    docstring gives for normalize."""
    doc = inspect.getdoc(cls)
    entry = re.search(r"^(\s*)normalize:(.*?)(?=^\1\w+:|\Z)", doc, re.M | re.S)
    assert entry, f"{cls.__name__}'s docstring does not describe normalize"
    choices = []
    for spellings, description in CHOICE.findall(" ".join(entry.group(2).split())):
        values = [eval(s) for s in re.split(r"\s*/\s*", spellings)]  # literals only (VALUE)
        named = [v for v in values if isinstance(v, str)]
        assert len(named) <= 1, f"{cls.__name__}: {spellings} names two modes"
        mode = named[0] if named else "none" if set(values) <= {False, None} else None
        assert mode in EXPECTED, f"{cls.__name__}: {spellings} means no known mode"
        choices.append((values, mode, description))
    return choices


def one_step(cls: type, **kwargs) -> tuple[list[float], list[float]]:
    params = [torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)) for _ in GRADS]
    for w, g in zip(params, GRADS):
        w.grad = torch.tensor(g, dtype=torch.float64)
    cls(params, lr=1.0, **kwargs).step()
    return tuple(w.detach().tolist() for w in params)


def assert_step(got, mode: str, label: str) -> None:
    for tensor, want in zip(got, EXPECTED[mode]):
        assert tensor == pytest.approx(want, rel=1e-14, abs=0), f"{label}: not {mode!r}"


def test_the_classes_that_take_normalize_are_the_expected_ones():
    assert {c.__name__ for c in takes_normalize()} == {"MirrorDescent", "NormalizedGD"}


@pytest.mark.parametrize("cls", takes_normalize(), ids=lambda c: c.__name__)
def test_every_documented_spelling_steps_as_documented(cls):
    choices = documented(cls)
    spellings = [v for values, _, _ in choices for v in values]
    assert True in spellings and "global" in spellings and "per_tensor" in spellings
    for values, mode, _ in choices:
        for value in values:
            assert_step(one_step(cls, normalize=value), mode, f"{cls.__name__}({value!r})")


@pytest.mark.parametrize("cls", takes_normalize(), ids=lambda c: c.__name__)
def test_the_documented_default_is_the_default(cls):
    defaults = [mode for _, mode, text in documented(cls) if "the default" in text]
    assert len(defaults) == 1, f"{cls.__name__}: the docstring names {len(defaults)} defaults"
    assert_step(one_step(cls), defaults[0], f"{cls.__name__}()")


def test_true_is_the_papers_global_norm_and_moves_the_small_tensor_little():
    """The issue's example, as numbers: True moved the second tensor to −1.0 before."""
    for cls in takes_normalize():
        assert one_step(cls, normalize=True)[1] == pytest.approx([0.0, -0.0002], abs=1e-10)
        assert one_step(cls, normalize="per_tensor")[1] == [0.0, -1.0]


def test_optimizers_md_says_what_the_code_does():
    row = next(line for line in OPTIMIZERS_MD.read_text().splitlines() if "| `normalize` |" in line)
    said = re.search(r'`True` is `"([a-z_]+)"`', row)
    assert said, row
    for cls in takes_normalize():
        assert_step(one_step(cls, normalize=True), said.group(1), f"OPTIMIZERS.md on {cls}")


@pytest.mark.parametrize("optimizer", ["md", "ngd"])
def test_the_engines_algorithm_reads_true_as_the_classes_do(optimizer):
    algorithm = Algorithm("a", optimizer, 1.0, normalize=True)
    assert algorithm.normalize == "global"
    assert algorithm.to_dict()["normalize"] == "global"  # what its runs are keyed by
    params = [torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)) for _ in GRADS]
    for w, g in zip(params, GRADS):
        w.grad = torch.tensor(g, dtype=torch.float64)
    algorithm.torch_optimizer(params).step()
    assert_step([w.detach().tolist() for w in params], "global", f"Algorithm({optimizer!r})")


def algorithms(normalize) -> list[dict]:
    return [
        {"name": "NGD", "optimizer": "ngd", "lr": 0.1},
        {"name": "ℓ3-MD", "optimizer": "md", "lr": 0.1, "p": 3.0, "normalize": normalize},
    ]


def test_a_config_that_writes_true_is_keyed_by_the_mode_it_means():
    """A config written `normalize = true` meant "per_tensor" before: its results must not be
    found under a key that now means "global" as if they were global. Its key is that of the
    config written "global"; and the [[optimizers]] tables of the real-data runs likewise."""
    keyed = {
        written: load_config("local-global", overrides={"algorithms": algorithms(written)})
        for written in (True, "global", "per_tensor")
    }
    assert keyed[True].to_dict()["algorithms"][1]["normalize"] == "global"
    assert keyed[True].algorithms[1].normalize == "global"
    key = {written: config_key(config.to_dict()) for written, config in keyed.items()}
    assert key[True] == key["global"] != key["per_tensor"]
    tables = [
        {"name": "md", "p": 1.1, "lr": 0.01, "normalize": True},
        {"name": "sngd", "lr": 0.1, "norm": True},
        {"name": "sgd", "lr": 0.1},
    ]
    config = load_config("text-finetune", overrides={"optimizers": tables})
    assert config.as_written("optimizers") == [
        {"name": "md", "p": 1.1, "lr": 0.01, "normalize": "global"},
        {"name": "sngd", "lr": 0.1, "norm": "global"},
        {"name": "sgd", "lr": 0.1},
    ]
    assert [a.normalize for a in config.optimizers[:2]] == ["global", "global"]
