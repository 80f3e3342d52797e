"""Every script in examples/ runs as a user would run it (a fresh interpreter, default dtype
float32) and prints what it promises; the quick start is the README's code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
README = ROOT / "README.md"
NUMBER = r"([0-9.]+(?:e[-+]?[0-9]+)?)"


def quickstart(out: str) -> None:
    found = re.search(rf"KKT residual {NUMBER}, divergence {NUMBER}", out)
    assert found, out
    residual, divergence = (float(x) for x in found.groups())
    assert residual < 1e-6 and divergence < 0.05, out


def own_training_loop(out: str) -> None:
    found = re.search(rf"loss over all data: {NUMBER} before training, {NUMBER} after", out)
    assert found, out
    before, after = (float(x) for x in found.groups())
    assert after < before / 4, out
    losses = [float(x) for x in re.findall(rf"^step +\d+ +loss {NUMBER}", out, re.MULTILINE)]
    assert len(losses) >= 5 and losses[-1] < losses[0], out
    assert float(re.search(rf"accuracy: {NUMBER}", out).group(1)) > 0.9, out
    assert "identical to the uninterrupted run: True" in out, out


# what each example must print; a new example needs an entry here
CHECKS = {
    "quickstart.py": ([], quickstart),
    "own_training_loop.py": ([], own_training_loop),
    "own_training_loop.py --bf16": (["--bf16"], own_training_loop),
}


def run(script: Path, *args: str) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # tiny models: threads cost more than they save
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_every_example_is_checked():
    assert EXAMPLES, "examples/ is empty"
    checked = {name.split()[0] for name in CHECKS}
    assert {p.name for p in EXAMPLES} == checked


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_example_runs_and_prints_its_result(name):
    args, check = CHECKS[name]
    check(run(ROOT / "examples" / name.split()[0], *args))


def test_quickstart_is_the_readme_example():
    block = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S).group(1)
    assert block in (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")


def test_a_failing_example_fails_the_test(tmp_path):
    """The runner reports a crash and a wrong result (the checks can fail)."""
    crash = tmp_path / "crash.py"
    crash.write_text("raise SystemExit(1)\n")
    with pytest.raises(AssertionError):
        run(crash)
    with pytest.raises(AssertionError):
        own_training_loop(
            "loss over all data: 0.69 before training, 0.60 after 300 steps\naccuracy: 0.5\n"
        )
