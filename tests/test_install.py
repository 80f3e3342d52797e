"""The README's main-job install works in a fresh virtual environment: the core install (no
`real` extra) gives a working `attnbias` that runs a synthetic experiment.

The README's command first installs a CPU build of torch from PyTorch's own index
(download.pytorch.org/whl/cpu). That index is not reachable from this machine (no network), so
the test takes torch from this machine's local CPU wheel instead: it runs the README's install
of the package with `-c constraints.txt`, which pins the torch version of that wheel (the
same CPU build the index serves). Everything else is the README's command as written."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


def main_job_command() -> str:
    """The README's main-job command: the indented line that runs `attnbias reproduce`."""
    set_up = README.read_text(encoding="utf-8").split("## Set-up: two commands")[1]
    commands = re.findall(r"^    (\S.*)$", set_up.split("\n## ")[0], re.MULTILINE)
    assert len(commands) == 2, commands  # the main job and the tests: two commands
    return next(c for c in commands if "attnbias reproduce" in c)


def test_the_main_job_installs_cpu_torch_and_the_core_package():
    steps = [shlex.split(part) for part in main_job_command().split(" && ")]
    torch_step, package_step, job = steps
    assert torch_step[:3] == ["pip", "install", "torch"] and CPU_INDEX in " ".join(torch_step)
    assert package_step == ["pip", "install", "-e", "."]  # the core install: no extra
    assert job == ["attnbias", "reproduce"]


def run(*command, cwd=ROOT, timeout=600) -> str:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_a_fresh_venv_installed_as_the_readme_says_runs_an_experiment(tmp_path):
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python, pip = venv / "bin" / "python", venv / "bin" / "pip"
    package_step = shlex.split(main_job_command().split(" && ")[1])
    assert package_step[:2] == ["pip", "install"]
    # torch from this machine's wheel (see the module docstring), then the README's install;
    # --no-compile: compiling torch's thousands of modules is most of an install's time
    constraints = ["-c", ROOT / "constraints.txt"]
    run(pip, "install", "-q", "--no-compile", *constraints, *package_step[2:])
    attnbias = venv / "bin" / "attnbias"
    assert run(attnbias, "--version").startswith("attnbias ")
    for extra in ("transformers", "sklearn", "mlxtend"):  # the core install has none of them
        missing = f"import importlib.util as u, sys; sys.exit(u.find_spec({extra!r}) is not None)"
        run(python, "-c", missing)
    out = tmp_path / "results"
    job = [attnbias, "run", "antipodal", "seeds=1", "steps=40", "--quick", "--out", out]
    printed = run(*job, cwd=tmp_path)
    assert re.search(r"trained \d+ runs", printed), printed
    assert re.search(r"^  \[(supported|NOT supported|inconclusive)\]", printed, re.M), printed
    assert (out / "antipodal" / "summary.json").is_file()
