"""The README's API example runs as written and shows convergence."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

pytestmark = pytest.mark.usefixtures("one_thread")


def test_readme_example_runs(capsys):
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["divergence"] < 0.05
    assert namespace["svm"].kkt_residual < 1e-6
    assert "divergence" in capsys.readouterr().out
