"""Hostile inputs, third round (issue 28): what a careless user and a hostile co-user still
found. Each test fails without its fix."""

import copy
import re
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from attnbias.cli import main
from attnbias.nesting import nesting_depth
from attnbias.optim import MirrorDescent
from attnbias.store import DamagedRun, ResultsStore, tidy, write_manifest
from attnbias.svm import SVMSolveError, att_svm


def one_error_line(capsys) -> str:
    """The stderr of a failed command: exactly one line, no traceback, no warning."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnbias: error: "), err
    return err


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


def stepped_mirror_descent():
    """A MirrorDescent (p = 3) on two parameters after two steps, and its parameters."""
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(3, 4, dtype=torch.float64)) for _ in range(2)]
    opt = MirrorDescent(params, lr=0.1, p=3.0)
    for _ in range(2):
        opt.zero_grad()
        sum((w**2).sum() for w in params).backward()
        opt.step()
    return opt, params


@pytest.mark.parametrize(
    "forged, problem",
    [
        (lambda dual: torch.tensor(5.0, dtype=torch.float64), r"has shape \(\), its parameter"),
        (lambda dual: dual.to_sparse(), "is a torch.sparse_coo tensor, not a dense one"),
        (lambda dual: torch.empty_like(dual, device="meta"), "is a meta tensor, not a dense one"),
    ],
    ids=["scalar", "sparse", "meta"],
)
def test_optimiser_state_tensors_must_be_dense_and_shaped_like_their_parameter(forged, problem):
    # a scalar dual was accepted (the step silently rebuilt it from w); sparse and meta
    # tensors ended in NotImplementedError / RuntimeError from inside the finiteness check
    opt, _ = stepped_mirror_descent()
    saved = opt.state_dict()
    state = copy.deepcopy(saved)
    state["state"][0]["dual"] = forged(state["state"][0]["dual"])
    with pytest.raises(ValueError, match=problem):
        opt.load_state_dict(state)
    after = opt.state_dict()
    assert after["param_groups"] == saved["param_groups"]
    assert all(
        torch.equal(after["state"][i][key], saved["state"][i][key])
        for i in saved["state"]
        for key in saved["state"][i]
    )


@pytest.mark.parametrize("line", ["{} = 1", "[{}]"], ids=["dotted key", "table header"])
def test_a_config_with_a_deeply_dotted_key_is_refused_before_parsing(tmp_path, capsys, line):
    # a.a.a… = 1 nests a table a dot; tomllib takes time quadratic in the dots (hours for the
    # 500,000 a 1 MB config holds), and the bracket count saw no nesting at all
    key = ".".join(["a"] * 20_000)
    path = tmp_path / "dotted.toml"
    path.write_text(f'experiment = "md-local"\n{line.format(key)}\n')
    started = time.perf_counter()
    assert main(["config", str(path)]) == 2
    line = one_error_line(capsys)
    assert re.search(r"nests (19999|20000) levels deep \(at most 32 are read\)", line)
    assert time.perf_counter() - started < 5
    # a config's own dotted keys and numbers still read
    assert nesting_depth("lr = 0.5\n[quick]\nsteps.x = [1.5, 2.5]\n") == 2


def test_token_indices_given_as_a_mask_are_refused_not_read_as_zeros_and_ones(tmp_path):
    # alpha = [True, False, True] was solved as tokens [1, 0, 1] and printed "optimal"
    problem = feasible_problem()
    for mask in (np.array([True, False, True]), torch.tensor([True, False, True])):
        with pytest.raises(TypeError, match="alpha must hold integer token indices, got dtype"):
            att_svm(problem["X"], problem["z"], mask)
    with pytest.raises(TypeError, match="alpha must hold integer token indices, got dtype"):
        att_svm(problem["X"], problem["z"], np.array([1 + 0j, 0, 1]))
    assert att_svm(problem["X"], problem["z"], np.array([1.0, 0.0, 1.0])).status == "optimal"


@pytest.mark.parametrize(
    "table, problem",
    [
        (pa.table({"a": [1, 2]}), "has no column 'step'"),
        (
            pa.table({"step": [1], "metric": ["m"], "value": ["x"]}),
            "has a column 'value' of type string",
        ),
    ],
    ids=["no step", "text values"],
)
def test_a_run_forged_with_a_metrics_table_of_another_shape_is_damaged(tmp_path, table, problem):
    # a forged metrics.parquet (its manifest forged with it) was read, and the experiment
    # ended in KeyError: 'Field "step" does not exist in schema', a traceback
    store = ResultsStore(tmp_path / "md-local")
    key = store.save({"seed": 1}, metrics=tidy([0, 1], {"loss": [1.0, 0.5]}))
    run = tmp_path / "md-local" / "runs" / key
    pq.write_table(table, run / "metrics.parquet")
    write_manifest(run, key=key, status="finished")
    with pytest.raises(DamagedRun, match=f"metrics.parquet {problem}"):
        store.load(key)
    # tidy's own tables load, an empty one (no metric recorded) too
    empty = store.save({"seed": 2}, metrics=tidy([], {}))
    assert store.load(empty).metrics.num_rows == 0
