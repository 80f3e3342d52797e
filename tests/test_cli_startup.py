"""The command line's start-up (issue 31): parsing any command, and --help and --version,
import none of the heavy packages; each command imports what it uses when it runs."""

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "numpy", "scipy", "cvxpy", "pyarrow", "pydantic", "matplotlib", "tqdm")
COMMANDS = [
    ["list"],
    ["reproduce"],
    ["reproduce", "md-local", "--quick", "--set", "lr=0.05", "--workers", "2"],
    ["run", "md-local", "seeds=2", "--quick"],
    ["config", "md-local", "--json"],
    ["claims", "--experiment", "md-local", "--verdict", "inconclusive", "--format", "csv"],
    ["export", "md-local"],
    ["svm", "p.npz", "--norm", "1.75", "--json"],
]


def heavy_imported(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The `heavy` packages in sys.modules after running `code` in a fresh interpreter."""
    found = f"sorted(m for m in {heavy!r} if m in sys.modules)"
    probe = f"{code}\nimport json, sys\nprint(json.dumps({found}))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_building_the_parser_and_parsing_every_command_imports_nothing_heavy():
    code = (
        "from attnbias.cli import parse, parser\n"
        "parser().format_help()\n"
        f"for argv in {COMMANDS!r}:\n"
        "    parse(argv)\n"
    )
    assert heavy_imported(code) == []


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_nothing_heavy(flag):
    code = (
        "import contextlib, io\n"
        "from attnbias.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main([{flag!r}])\n"
        "    except SystemExit as exit_:\n"
        "        assert exit_.code == 0, exit_.code\n"
    )
    assert heavy_imported(code) == []


def test_the_probe_sees_a_heavy_import():
    """The check above can fail: a command that runs imports what it needs."""
    assert "numpy" in heavy_imported("import attnbias.npz")


def test_the_registers_configs_build_no_torch_optimizer():
    """The tally that ends `reproduce` reads the real-data configs (their seeds); a torch
    optimiser built to check their empty options imported torch._dynamo (~2.5 s of CPU)."""
    code = (
        "from attnbias.experiment_registry import load_config\n"
        "for name in ('md-local', 'text-md', 'text-finetune', 'vision'):\n"
        "    load_config(name)\n"
    )
    assert heavy_imported(code, ("torch", "torch._dynamo")) == ["torch"]


def test_the_register_builds_no_torch_optimizer():
    """The register's rows state protocols from their configs (reexamine-adam's Σηₜ from its
    Adam arms, whose options were checked by building torch's Adam); the tally builds them at
    the end of every `reproduce`. Options are checked on an empty parameter list now."""
    code = "from attnbias.judging import register\nregister.entries()\n"
    assert heavy_imported(code, ("torch", "torch._dynamo")) == ["torch"]


def collector_after(code: str) -> dict:
    """The garbage collector's young-object threshold before and after `code`, and how many
    objects the exit handlers left frozen (gc.freeze), in a fresh interpreter."""
    probe = (
        "import atexit, contextlib, gc, io, json, sys\n"
        "from attnbias import cli\n"
        "before = gc.get_threshold()[0]\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    {code}\n"
        "young = gc.get_threshold()[0]\n"
        "atexit._run_exitfuncs()\n"
        "print(json.dumps({'before': before, 'young': young, 'frozen': gc.get_freeze_count()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_the_command_line_process_collects_less_and_not_at_its_exit():
    """`attnbias …` (main() on the process's own arguments) raises the collector's threshold
    and freezes every object at its exit, where the last passes would trace them all; main()
    called with arguments, as a library or a test calls it, leaves the collector alone."""
    from attnbias.cli import YOUNG_OBJECTS

    as_script = collector_after("sys.argv = ['attnbias', 'list']; cli.main()")
    assert as_script["young"] == YOUNG_OBJECTS and as_script["frozen"] > 1000
    as_library = collector_after("cli.main(['list'])")
    assert as_library["young"] == as_library["before"] != YOUNG_OBJECTS
    assert as_library["frozen"] == 0
