"""The norms' names are one table (`attnbias.norm_names`): the reading of a name, the error
messages, the command line's help and a norm field's JSON schema are made from it, so a new norm
appears in each by itself."""

import pytest

from attnbias import cli, norm_names
from attnbias.experiments.atlas import GapConfig
from attnbias.metrics import Norm, parse_norm


@pytest.fixture
def toy_matrix_norm(monkeypatch):
    """A matrix norm added to the table only: "toy", its own dual."""
    monkeypatch.setitem(norm_names.MATRIX_NORM_MEANINGS, "toy", "toy: a norm of the table alone")
    monkeypatch.setitem(norm_names.DUAL_MATRIX_NORMS, "toy", "toy")
    monkeypatch.setitem(norm_names.NAMED_NORMS, "toy", "toy")
    return "toy"


def test_a_matrix_norm_added_to_the_table_is_read_and_listed(toy_matrix_norm):
    assert parse_norm("TOY") == "toy"
    norm = Norm.parse("toy")
    assert (norm.is_lp, norm.dual, norm.meaning) == (False, norm, "toy: a norm of the table alone")
    assert '"toy"' in norm_names.allowed_norms()
    assert '"toy"' not in norm_names.allowed_norms(allow_matrix=False)
    assert "toy (toy: a norm of the table alone)" in norm_names.norms_help()
    with pytest.raises(ValueError, match='"toy"'):
        parse_norm("operator")


def test_every_name_and_meaning_of_the_table_is_in_the_help_and_messages():
    help_text, allowed = norm_names.norms_help(), norm_names.allowed_norms()
    for name, value in norm_names.NAMED_NORMS.items():
        assert name in help_text and f'"{name}"' in allowed
        assert norm_names.meaning(value) in help_text
    assert "spectral (spectral: largest singular value)" in help_text
    assert "inf = max (entrywise ℓ∞: largest absolute entry)" in help_text


def test_the_cli_help_and_the_config_fields_are_made_from_the_table():
    svm = cli.parser()._subparsers._group_actions[0].choices["svm"]
    (norm_help,) = [a.help for a in svm._actions if "--norm" in a.option_strings]
    assert norm_help == f"{norm_names.norms_help()} (default 2)"
    schema = GapConfig.model_json_schema()["properties"]["norms"]
    assert {"enum": list(norm_names.norm_names())} in schema["items"]["anyOf"]
    assert norm_names.allowed_norms() in schema["description"]


def test_a_config_s_bad_norm_lists_the_table(toy_matrix_norm):
    from attnbias.experiment_registry import load_config

    norms = [norm.value for norm in load_config("atlas", quick=True).norms]
    with pytest.raises(ValueError, match='"toy"'):
        load_config("atlas", quick=True, overrides={"norms": [*norms, "operator"]})
    config = load_config("atlas", quick=True, overrides={"norms": [*norms, "toy"]})
    assert config.norms[-1] == Norm("toy")


def test_a_new_matrix_norm_is_its_table_entries_and_its_solver_entry(monkeypatch):
    """docs/ARCHITECTURE.md, "Adding a norm", followed from outside the package: a toy matrix
    norm, the Schatten 2-norm (= Frobenius, so every answer is known), added as the table's
    entries in norm_names.py and one MatrixNormSolver (no structured solve: the conic program),
    is read, measured, dualised, listed and solved for, with no other file touched."""
    import cvxpy as cp
    import numpy as np

    from attnbias.data import gaussian_unit
    from attnbias.metrics import matrix_norm
    from attnbias.svm import att_svm, selected_tokens
    from attnbias.svm.matrix_norms import MATRIX_NORM_SOLVERS, MatrixNormSolver

    name = "schatten2"
    monkeypatch.setitem(norm_names.MATRIX_NORM_MEANINGS, name, "Schatten-2: √(Σ σ²)")
    monkeypatch.setitem(norm_names.DUAL_MATRIX_NORMS, name, name)
    monkeypatch.setitem(norm_names.MATRIX_NORM_ORDS, name, "fro")
    monkeypatch.setitem(norm_names.NAMED_NORMS, name, name)
    solver = MatrixNormSolver(
        name,
        lambda singular: float(np.sqrt((singular**2).sum())),
        lambda W: cp.norm(W, "fro"),
        lambda m, D, queries: 0,
        lambda rank_one, w_l2: None,
    )
    monkeypatch.setitem(MATRIX_NORM_SOLVERS, name, solver)

    assert name in norm_names.MATRIX_NORMS and name in norm_names.norms_help()
    assert Norm.parse(name).dual == Norm(name) and not Norm.parse(name).is_lp
    P = gaussian_unit(n=4, T=5, d=4, seed=3)
    W = np.random.default_rng(0).normal(size=(4, 4))
    assert matrix_norm(W, name).item() == pytest.approx(matrix_norm(W, 2.0).item(), rel=1e-12)
    alpha = selected_tokens(W, P.X, P.z)
    toy, frobenius = att_svm(P.X, P.z, alpha, norm=name), att_svm(P.X, P.z, alpha, norm=2.0)
    assert toy.status == "optimal" and toy.kkt_residual <= 1e-6
    assert toy.norm == pytest.approx(frobenius.norm, rel=1e-5)
    np.testing.assert_allclose(toy.W, frobenius.W, atol=1e-4 * np.abs(frobenius.W).max())
