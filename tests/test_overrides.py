"""Config fields changed on the command line: `attnbias run NAME key=value`, `attnbias reproduce
NAME --set key=value`, `attnbias config NAME key=value`. Values are read as TOML values and
checked by the typed config, with the one-line errors a TOML file gets, naming only what the
user typed."""

from __future__ import annotations

import json

import pytest

from attnbias.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")


def resolved(capsys, *args: str) -> dict:
    assert main(["config", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def error_line(capsys, *args: str) -> str:
    """The one line a refused command prints (exit code 2, nothing on stdout)."""
    assert main(list(args)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnbias: error: "), captured.err
    return lines[0].removeprefix("attnbias: error: ")


def test_config_shows_the_overridden_fields(capsys):
    changes = ["lr=0.05", "seeds=3", "ps=[1.5,2.0]", "steps=[10,20]", "loss=exponential"]
    config = resolved(capsys, "md-local", *changes)
    assert config["lr"] == 0.05 and config["seeds"] == 3
    assert config["ps"] == [1.5, 2.0] and config["steps"] == [10, 20]
    assert config["loss"] == "exponential"  # a bare word is a string
    default = resolved(capsys, "md-local")
    assert {k for k in config if config[k] != default[k]} == {"lr", "seeds", "ps", "steps", "loss"}


def test_values_are_toml_values(capsys):
    assert resolved(capsys, "text-md", 'normalize="global"')["normalize"] == "global"
    assert resolved(capsys, "md-local", "steps=[10, 20, 30]")["steps"] == [10, 20, 30]
    # TOML's integer 2 for a real field is 2.0, as in a file
    assert resolved(capsys, "md-local", "lr=2")["lr"] == 2.0


def test_overrides_may_follow_the_options(capsys):
    config = resolved(capsys, "md-local", "lr=0.05", "--quick", "seeds=3")
    assert config["lr"] == 0.05 and config["seeds"] == 3


def test_overrides_apply_over_the_quick_table(capsys):
    quick = resolved(capsys, "md-local", "--quick")
    assert resolved(capsys, "md-local", "--quick", f"seeds={quick['seeds'] + 1}")["seeds"] == (
        quick["seeds"] + 1
    )


@pytest.mark.parametrize(
    "command",
    [
        ["config", "md-local", "lrr=0.05"],
        ["run", "md-local", "lrr=0.05", "--out", "OUT"],
        ["reproduce", "md-local", "--set", "lrr=0.05", "--out", "OUT"],
    ],
)
def test_an_unknown_key_is_one_line_naming_it(capsys, command, tmp_path):
    line = error_line(capsys, *[str(tmp_path) if a == "OUT" else a for a in command])
    assert line.startswith("lrr=0.05: md-local: unknown config field 'lrr'"), line
    assert "lr," in line  # the known fields are listed


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("seeds=0", "seeds=0: md-local: seeds must be >= 1, got 0"),
        ("seeds=abc", "seeds=abc: md-local: seeds must be an integer, got str 'abc'"),
        ("lr=nan", "lr=nan: md-local: lr must be "),
        ("ps=[0.5]", "ps=[0.5]: md-local: ps must be a non-empty list of floats > 1"),
        ("ps=[1.5,", "ps=[1.5,: '[1.5,' is not a TOML value"),
        ("seeds", "'seeds': an override is KEY=VALUE"),
        ("=3", "'=3': an override is KEY=VALUE"),
        ("experiment=atlas", "experiment=atlas: the experiment is chosen by its NAME"),
    ],
)
def test_a_bad_value_is_one_line_naming_what_was_typed(capsys, typed, says):
    line = error_line(capsys, "config", "md-local", typed)
    assert line.startswith(says), line


def test_the_error_is_the_one_a_toml_file_gets(capsys, tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text('experiment = "md-local"\nseeds = 0\n')
    from_file = error_line(capsys, "run", str(config), "--out", str(tmp_path))
    typed = error_line(capsys, "run", "md-local", "seeds=0")
    assert from_file == f"{config}: md-local: seeds must be >= 1, got 0"
    assert typed == "seeds=0: md-local: seeds must be >= 1, got 0"


def test_errors_name_only_what_was_typed(capsys):
    """No --out, --set or package file in the message of a user who typed none of them."""
    for args in (["run", "md-local", "seeds=0"], ["reproduce", "md-local", "--set", "seeds=0"]):
        line = error_line(capsys, *args)
        assert "--out" not in line and "--set" not in line and ".toml" not in line, line
    line = error_line(capsys, "reproduce", "md-local", "seeds=3")
    assert line == "seeds=3: reproduce changes a config field with --set seeds=3"


def test_a_rule_across_fields_names_every_override(capsys):
    """ps and steps must match: the line names all that was typed, not the last item only."""
    line = error_line(capsys, "config", "md-local", "ps=[1.5,2.0]", "lr=0.05")
    assert line.startswith("ps=[1.5,2.0] lr=0.05: md-local: steps must have one entry per"), line


def test_overrides_in_a_config_file_run_layer_over_it(capsys, tmp_path):
    config = tmp_path / "mine.toml"
    config.write_text('experiment = "md-local"\nseeds = 5\nlr = 0.2\n')
    found = resolved(capsys, str(config), "lr=0.05")
    assert found["seeds"] == 5 and found["lr"] == 0.05


@pytest.mark.slow
def test_run_and_reproduce_train_the_overridden_config(capsys, tmp_path):
    """`run NAME k=v` trains that config; `reproduce NAME --set k=v` of the same fields is the
    same config (its outputs reused)."""
    fields = ["seeds=1", "steps=40"]
    assert main(["run", "ngd-fixed", *fields, "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "trained" in out
    stored = json.loads((tmp_path / "ngd-fixed" / "config.json").read_text())
    assert stored["seeds"] == 1 and stored["steps"] == 40
    sets = [arg for field in fields for arg in ("--set", field)]
    assert main(["reproduce", "ngd-fixed", "--quick", *sets, "--out", str(tmp_path)]) == 0
    assert "reused" in capsys.readouterr().out
