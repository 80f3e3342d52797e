"""Hostile inputs, third round (issue 28): what a careless user and a hostile co-user still
found. Each test fails without its fix."""

import numpy as np
import pytest

from attnbias.svm import SVMSolveError, att_svm


def feasible_problem(scale: float = 1.0) -> dict:
    """X, z, alpha of a feasible Att-SVM (9 constraints in 100 dimensions), X times scale."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 4, 10)) * scale
    return {"X": X, "z": rng.standard_normal((3, 10)), "alpha": np.zeros(3, int)}


def test_a_solution_beyond_the_float64_range_is_refused_not_reported_optimal():
    # X of subnormal size: W_mm is about 1e314, which float64 cannot hold; it was printed as
    # "‖W_mm‖ inf, margin nan, status optimal" under two RuntimeWarnings
    problem = feasible_problem(1e-315)
    with pytest.raises(SVMSolveError, match="beyond the float64 range"):
        att_svm(problem["X"], problem["z"], problem["alpha"])
    # still solved, and exactly, where float64 holds the answer
    small = feasible_problem(1e-300)
    result = att_svm(small["X"], small["z"], small["alpha"])
    reference = att_svm(**feasible_problem(), norm=2)
    assert result.status == "optimal"
    assert result.norm == pytest.approx(reference.norm * 1e300, rel=1e-9)
