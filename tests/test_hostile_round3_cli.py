"""Hostile inputs, third round (issue 28), on the command line: `attnbias svm` and the
KEY=VALUE overrides. Each test fails without its fix."""

import numpy as np
import pytest

from attnbias.cli import main
from test_hostile_round3 import feasible_problem, one_error_line


def test_no_verified_svm_solution_is_one_line_on_the_command_line(tmp_path, capsys):
    # the SVMSolveError above (a RuntimeError) was a traceback out of `attnbias svm`
    np.savez(tmp_path / "tiny.npz", **feasible_problem(1e-315))
    assert main(["svm", str(tmp_path / "tiny.npz")]) == 2
    assert "beyond the float64 range" in one_error_line(capsys)


def test_svm_write_replaces_an_existing_file_only_with_force(tmp_path, capsys):
    # `export --write` and `claims --write` protect a file of the user's; `svm --write` wrote
    # over it (and, failing half-way, would have left it truncated)
    np.savez(tmp_path / "p.npz", **feasible_problem())
    mine = tmp_path / "mine.npz"
    mine.write_bytes(b"a file of my own")
    assert main(["svm", str(tmp_path / "p.npz"), "--write", str(mine)]) == 2
    assert "--force replaces it" in one_error_line(capsys)
    assert mine.read_bytes() == b"a file of my own"
    assert main(["svm", str(tmp_path / "p.npz"), "--write", str(mine), "--force"]) == 0
    with np.load(mine) as saved:
        assert saved["W"].shape == (10, 10)
    assert main(["svm", str(tmp_path / "p.npz"), "--force"]) == 2
    assert "--force: only with --write" in one_error_line(capsys)


@pytest.mark.parametrize(
    "value, problem",
    [("[" * 5000, "d nests 5000 levels deep"), ("9" * 5000, "d: Exceeds the limit")],
    ids=["deep", "long integer"],
)
def test_an_override_value_is_bounded_as_a_config_file_is(capsys, value, problem):
    # `d=[[[[…` (5,000 levels) was a RecursionError traceback out of tomllib
    assert main(["config", "md-local", f"d={value}"]) == 2
    assert problem in one_error_line(capsys)
