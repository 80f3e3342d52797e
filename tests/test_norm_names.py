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
