"""One home for each name (issue 32): a top-level function, class or upper-case constant of the
package, public or private, is defined in one module only, read from the source (ast); the one
exception is the driver protocol, names each experiment driver defines for itself; and the
steps that were written twice are one call."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest
import torch

from attnbias.optim import functional as F

SRC = Path(__file__).resolve().parent.parent / "src" / "attnbias"
# The names of the driver protocol (experiment_registry.py, docs/ARCHITECTURE.md): each driver
# module in experiments/ defines its own, by design; anywhere else they count as any name.
DRIVER_PROTOCOL = {
    "DESCRIPTION": "experiment_registry reads each driver's one-line description",
    "Config": "experiment_registry reads each driver's config class",
    "run": "experiment_registry calls each driver's run(config, out)",
    "check_data": "experiment_registry calls a driver's check_data(config) before it trains",
    "FULL_SCALE_MINUTES": "the cli reads each real-data driver's full-scale time",
    "specs": "a synthetic driver's runs of its config, which other drivers reuse by module "
    "(atlas.specs, ngd_fixed.specs)",
    "claims": "a driver's claims of its runs, which its run publishes",
    "figure": "a driver's figure of its runs, which its run publishes",
}


def top_level_names(path: Path) -> set[str]:
    """The functions, classes and upper-case constants a module defines at top level."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()}
    return names


def homes(root: Path = SRC) -> dict[str, list[str]]:
    """Name → the modules (relative to `root`) that define it at top level."""
    found = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for name in top_level_names(path):
            found[name].append(path.relative_to(root).as_posix())
    return found


def is_driver(module: str) -> bool:
    """A driver, or the config module a driver's Config moved to so that the claims register
    can read it without importing the driver (experiment_configs/)."""
    top = module.split("/")[0]
    return top in ("experiments", "experiment_configs") and module.count("/") == 1


def defined_twice(found: dict[str, list[str]]) -> dict[str, list[str]]:
    """The names with more than one home, but a protocol name defined by drivers only and
    Python's own module hooks (a module's `__getattr__`: its lazily built attributes)."""
    return {
        name: where
        for name, where in found.items()
        if len(where) > 1
        and not (name in DRIVER_PROTOCOL and all(map(is_driver, where)))
        and not (name.startswith("__") and name.endswith("__"))
    }


def test_every_name_of_the_package_is_defined_once():
    assert not defined_twice(homes())


def test_every_protocol_name_is_one_that_drivers_define():
    found = homes()
    assert all(any(map(is_driver, found[name])) for name in DRIVER_PROTOCOL)


def test_the_check_sees_a_name_defined_twice(tmp_path):
    (tmp_path / "a.py").write_text("class Rule:\n    pass\nSTEP = 1\n")
    (tmp_path / "b.py").write_text("def Rule():\n    pass\n_private = 2\n")
    assert top_level_names(tmp_path / "a.py") & top_level_names(tmp_path / "b.py") == {"Rule"}


def test_the_check_sees_private_names_and_protocol_names_outside_the_drivers(tmp_path):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "engine").mkdir()
    for driver in ("one.py", "two.py"):
        (tmp_path / "experiments" / driver).write_text(
            "def run():\n    pass\nclass _Rows:\n    pass\n"
        )
    assert defined_twice(homes(tmp_path)) == {"_Rows": ["experiments/one.py", "experiments/two.py"]}
    (tmp_path / "engine" / "loop.py").write_text("def run():\n    pass\n")
    assert set(defined_twice(homes(tmp_path))) == {"_Rows", "run"}


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("lr", [1.0, 0.3, "per run"])
def test_step_with_foreach_takes_the_euclidean_step_in_foreach_kernels_bit_for_bit(
    momentum, lr, monkeypatch
):
    g = torch.Generator().manual_seed(0)
    shapes = [(3, 4, 5), (3, 7)]
    params = [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes]
    grads = [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes]
    divisors = [torch.rand(3, generator=g, dtype=torch.float64) + 0.5 for _ in shapes]
    eta = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64) if lr == "per run" else lr
    results = {}
    for foreach in (False, True):
        w = [p.clone() for p in params]
        buffers = [torch.ones_like(p) for p in params]
        F.step_(w, grads, divisors, eta, momentum=momentum, buffers=buffers, foreach=foreach)
        results[foreach] = (w, buffers)
    for loop, multi in zip(*([*results[f][0], *results[f][1]] for f in (False, True))):
        assert torch.equal(loop, multi)
    calls = []
    for kernel in ("_foreach_add_", "_foreach_addcdiv_", "_foreach_sub_"):
        original = getattr(torch, kernel)
        monkeypatch.setattr(
            torch, kernel, lambda *a, k=original, **kw: calls.append(1) or k(*a, **kw)
        )
    F.step_([p.clone() for p in params], grads, divisors, eta, momentum=momentum,
            buffers=[torch.ones_like(p) for p in params], foreach=True)  # fmt: skip
    assert calls  # the foreach kernels took the step
