"""The command line is built from a table (`cli.COMMANDS`): each command's arguments are data,
and the parser they build is the one the hand-written parser was, flag for flag."""

import argparse
import json
from pathlib import Path

import pytest

from attnbias import cli

# every action of the parser before it was built from the table (generated from 9dda1b1)
BEFORE = Path(__file__).parent / "fixtures" / "cli_parser.json"


def action_of(a: argparse.Action) -> dict:
    choices = None if a.choices is None else list(a.choices)
    return {
        "class": type(a).__name__,
        "option_strings": list(a.option_strings),
        "dest": a.dest,
        "nargs": a.nargs,
        "default": repr(a.default),
        "type": getattr(a.type, "__name__", repr(a.type)),
        "choices": choices,
        "required": a.required,
        "metavar": a.metavar,
        "help": a.help,
    }


def described(p: argparse.ArgumentParser) -> dict:
    """What a parser accepts: its actions in order, its exclusive groups, its defaults, its
    texts and, for each command, the same."""
    actions = [a for a in p._actions if not isinstance(a, argparse._SubParsersAction)]
    commands = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    out = {
        "description": p.description,
        "epilog": p.epilog,
        "defaults": {k: getattr(v, "__name__", repr(v)) for k, v in p._defaults.items()},
        "actions": [action_of(a) for a in actions],
        "exclusive": [[a.dest for a in g._group_actions] for g in p._mutually_exclusive_groups],
    }
    if commands:
        out["commands"] = {name: described(c) for name, c in commands[0].choices.items()}
        out["command_help"] = [a.help for a in commands[0]._choices_actions]
    return out


def test_the_table_builds_the_parser_the_hand_written_one_was():
    assert described(cli.parser()) == json.loads(BEFORE.read_text())


def test_the_commands_are_the_table_in_its_order():
    names = [c.name for c in cli.COMMANDS]
    assert names == ["list", "reproduce", "run", "config", "claims", "export", "svm"]
    parsed = {n: cli.parser().parse_args([n, *(["x"] if n in ("run", "config", "export",
              "svm") else [])]) for n in names}  # fmt: skip
    for command in cli.COMMANDS:
        assert parsed[command.name].command is command.run


def test_a_command_added_to_the_table_is_parsed(monkeypatch):
    """A new command is one entry: its arguments as data, a shared set, an exclusive pair."""
    toy = cli.Command(
        "toy",
        lambda args: 0,
        "a toy command",
        (
            cli.arg("thing", help="what"),
            cli.OneOf(
                (cli.arg("--fast", action="store_true"), cli.arg("--slow", action="store_true"))
            ),
            cli.CLUSTER_FLAGS,
        ),
    )
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, toy))
    args = cli.parser().parse_args(["toy", "it", "--fast", "--workers", "2"])
    assert (args.thing, args.fast, args.slow, args.workers, args.command) == (
        "it", True, False, 2, toy.run)  # fmt: skip
    with pytest.raises(SystemExit) as exit:
        cli.parser().parse_args(["toy", "it", "--fast", "--slow"])
    assert exit.value.code == 2
