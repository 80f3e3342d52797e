"""The import rules between rooms (docs/ARCHITECTURE.md#folders), read from the source (ast):
layers import downward only, and judging imports no experiment driver."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from attnbias.experiment_registry import CONFIG_MODULES, config_schema, find_experiment, load_config

SRC = Path(__file__).resolve().parent.parent / "src" / "attnbias"


def is_module(dotted: str) -> bool:
    path = SRC.joinpath(*dotted.split(".")[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_of(source: str, package: list[str]) -> set[str]:
    """The attnbias modules a source imports (its package as dotted parts), as absolute dotted
    names; `from pkg import name` counts `pkg.name` too when that is a module."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            named = {f"{module}.{alias.name}" for alias in node.names}
            found |= {module} | {name for name in named if is_module(name)}
    return {name for name in found if name.startswith("attnbias")}


def imported_modules(path: Path) -> set[str]:
    """The attnbias modules a source file imports."""
    package = ["attnbias", *path.relative_to(SRC).parent.parts]
    return imports_of(path.read_text(encoding="utf-8"), package)


def above_judging(module: str) -> bool:
    """Whether a module is in a room above judging: the experiments (drivers) or the CLI."""
    return module.startswith(("attnbias.experiments", "attnbias.cli")) or module == "attnbias.cli"


def sources(*patterns: str) -> list[Path]:
    return sorted(path for pattern in patterns for path in SRC.glob(pattern))


def relative(path: Path) -> str:
    return str(path.relative_to(SRC))


@pytest.mark.parametrize(
    "path",
    [SRC / "config.py", *sources("real/*.py", "optim/*.py")],
    ids=relative,
)
def test_config_real_and_optim_do_not_import_the_engine(path):
    assert not {m for m in imported_modules(path) if m.startswith("attnbias.engine")}


@pytest.mark.parametrize(
    "path",
    [
        *sources("judging/*.py", "judging/verdicts/*.py", "experiment_configs/*.py"),
        SRC / "curves.py",
        SRC / "theory_measures.py",
        SRC / "experiment_registry.py",
    ],
    ids=relative,
)
def test_judging_and_what_it_reads_import_no_driver(path):
    assert not {m for m in imported_modules(path) if above_judging(m)}


def test_the_import_rule_sees_a_driver_imported_by_name_or_from():
    source = "from ...experiments import md_local\nfrom ...experiments.runs import sweep\n"
    found = imports_of(source, ["attnbias", "judging", "verdicts"])
    assert {"attnbias.experiments.md_local", "attnbias.experiments.runs"} <= found
    assert {m for m in found if above_judging(m)}


def test_importing_the_verdict_rules_and_the_report_loads_no_experiment():
    # at run time too: the rules, the claims model and the report load nothing of experiments/
    code = (
        "import sys, attnbias.judging.claims, attnbias.judging.report, attnbias.judging.forest\n"
        "import attnbias.judging.papers\n"
        "from attnbias.judging.verdicts import atlas, common, md, ngd, real, reexamine, theory\n"
        "from attnbias.judging.verdicts import tuning\n"
        "above = ('attnbias.experiments', 'attnbias.cli')\n"
        "print(sorted(m for m in sys.modules if m.startswith(above)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_importing_the_register_loads_no_experiment():
    # the register states protocols from configs (experiment_registry.CONFIG_MODULES), not drivers
    code = (
        "import sys, attnbias.judging.register\n"
        "print(sorted(m for m in sys.modules if m.startswith('attnbias.experiments')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", sorted(CONFIG_MODULES))
def test_a_config_read_without_its_driver_is_the_one_the_driver_runs_with(name):
    assert config_schema(name).Config is find_experiment(name).Config
    assert type(load_config(name, quick=True)) is find_experiment(name).Config
