"""One home for each name in the norm, divisor, optimiser and registry code (issue 32): a public
top-level function, class or constant of those modules is defined nowhere else in the package,
read from the source (ast); and the steps that were written twice are one call."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest
import torch

from attnbias.optim import functional as F

SRC = Path(__file__).resolve().parent.parent / "src" / "attnbias"
# the norm, divisor, optimiser and registry code
SEAMS = [
    *sorted((SRC / "optim").glob("*.py")),
    *(SRC / name for name in ("norms.py", "norm_names.py", "metrics.py", "config.py")),
    *(SRC / name for name in ("experiment_registry.py", "defaults.py")),
    *(SRC / "svm" / name for name in ("norms.py", "matrix_norms.py", "memory.py")),
    *(SRC / "engine" / name for name in ("fused.py", "update.py", "targets.py", "steppers.py")),
    # names once defined twice: FOREST, NOT_RUN, MINILM, LOSSES, FLOAT_FLOOR, chosen, table
    *(SRC / name for name in ("store.py", "cli_tally.py", "cli_claims.py", "losses.py")),
    *(SRC / "judging" / name for name in ("report.py", "register.py")),
    SRC / "experiments" / "baselines.py",
]


def top_level_names(path: Path) -> set[str]:
    """The public functions, classes and upper-case constants a module defines at top level."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()}
    return {name for name in names if not name.startswith("_")}


def homes() -> dict[str, list[str]]:
    found = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        for name in top_level_names(path):
            found[name].append(str(path.relative_to(SRC)))
    return found


def test_every_name_of_the_seams_is_defined_once():
    found = homes()
    seams = {str(path.relative_to(SRC)) for path in SEAMS}
    twice = {name: where for name, where in found.items() if len(where) > 1 and seams & set(where)}
    assert not twice


def test_the_check_sees_a_name_defined_twice(tmp_path):
    (tmp_path / "a.py").write_text("class Rule:\n    pass\nSTEP = 1\n")
    (tmp_path / "b.py").write_text("def Rule():\n    pass\n_private = 2\n")
    assert top_level_names(tmp_path / "a.py") & top_level_names(tmp_path / "b.py") == {"Rule"}


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
