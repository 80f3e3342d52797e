"""Issue 33: the tally that ends `attnbias reproduce`, `attnbias claims --experiment / --verdict /
--format`, and errors that name only what the user typed."""

import csv
import io
import json
import re

import numpy as np
import pytest

from attnbias import cli, experiment_registry
from attnbias.cli import main
from attnbias.cli_claims import VERDICTS
from attnbias.data import gaussian_unit
from attnbias.judging.claims import Claim, Effect, Rule, causes, leaf_reason
from attnbias.judging.register import REGISTER
from test_cli import one_error_line

# As md-local: its three register entries answered with three verdicts; the rest of the
# claims are ours: a second inconclusive cause, a compound claim with two causes, n/a and a
# check. As md-joint: the same claims, none of them md-joint's register entries (not run).
FAKE = """
from attnbias.judging.claims import Claim, Effect, Rule, identified
DESCRIPTION = 'fake with verdicts'
RULE = Rule("x", ">", 1.0, "ours")
CHECK = Rule("violations", "<=", 0.0, "an identity", consistency=True)

def effect(low, high):
    return Effect((low + high) / 2, low, high, 5, "t interval")

def run(config, out):
    claims = [
        Claim("holds", rule=RULE, effect=effect(1.5, 2.5)),
        Claim("fails", rule=RULE, effect=effect(0.2, 0.8)),
        Claim("straddles", rule=RULE, effect=effect(0.5, 1.5)),
        Claim("stalled", rule=RULE, effect=effect(1.5, 2.5), unmet=["runs stalled"]),
        Claim("both", parts=[Claim("", rule=RULE, effect=effect(0.5, 1.5)),
                             Claim("", rule=RULE, effect=effect(1.5, 2.5), unmet=["stalled"])]),
        Claim("nothing to compare", None),
        Claim("identity", rule=CHECK, effect=Effect(0.0, 0.0, 0.0, 3, "exact")),
    ]
    slugs = ["own-p-diagonal", "own-p-nearest", "zero-init", "stalled", "both", "na", "check"]
    return {"claims": identified(config["experiment"], claims, slugs)}
"""
PRINTED = {"supported", "NOT supported", "inconclusive", "not applicable", "check passes"}


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """md-local and md-joint replaced by FAKE (its quick config: seeds = 1)."""
    (tmp_path / "fake_verdicts.py").write_text(FAKE)
    (tmp_path / "configs").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(experiment_registry, "CONFIG_DIR", tmp_path / "configs")
    for name in ("md-local", "md-joint"):
        (tmp_path / "configs" / f"{name}.toml").write_text("seeds = 5\n[quick]\nseeds = 1\n")
        monkeypatch.setitem(experiment_registry.EXPERIMENTS, name, "fake_verdicts")
    return tmp_path / "res"


def printed_verdicts(out: str) -> dict[str, list[str]]:
    """The verdict rows `reproduce` printed for each experiment ("  [word] claim")."""
    found, name = {}, None
    for line in out.splitlines():
        if line.startswith("== "):
            name = line.split()[1]
            found[name] = []
        elif name and (hit := re.match(r"  \[([^\]]+)\] ", line)):
            found[name].append(hit.group(1))
    return found


def tally_row(out: str, name: str) -> list[int]:
    """The five counts of the tally's row `name`: supported, not supported, inconclusive, not
    applicable, not run."""
    line = next(x for x in out.splitlines() if re.match(rf"  {re.escape(name)}\s+\d", x))
    return [int(n) for n in line.split()[1:6]]


def test_reproduce_ends_with_a_tally_that_counts_the_printed_verdicts(fake, capsys):
    assert main(["reproduce", "md-local", "md-joint", "--quick", "--out", str(fake)]) == 0
    out = capsys.readouterr().out
    rows = printed_verdicts(out)
    assert set(rows) == {"md-local", "md-joint"} and set(rows["md-local"]) == PRINTED
    for name, words in rows.items():
        paper = [w for w in words if not w.startswith("check")]
        counts = [paper.count(w) for w in ("supported", "NOT supported", "inconclusive")]
        counts += [paper.count("not applicable")]
        assert tally_row(out, name)[:4] == counts == [1, 1, 3, 1]
    joint = sum(e.experiment == "md-joint" for e in REGISTER)  # its entries: none answered
    assert [tally_row(out, "md-local")[4], tally_row(out, "md-joint")[4]] == [0, joint]
    assert tally_row(out, "total") == [2, 2, 6, 2, joint]
    # a claim with two causes counts under each: straddles (2 claims), precondition (2)
    total = next(x for x in out.splitlines() if x.startswith("  total"))
    assert total.endswith("CI straddles the threshold 4, a precondition failed 4")
    assert "2 of 2 pass" in total  # the checks, apart from the verdicts
    assert "quick scale is a smoke run of the code, not evidence" in out


def test_the_main_job_counts_the_experiments_it_leaves_out_as_not_run(fake, monkeypatch, capsys):
    monkeypatch.setattr(experiment_registry, "SYNTHETIC", ("md-local",))
    assert main(["reproduce", "--out", str(fake)]) == 0
    out = capsys.readouterr().out
    left_out = [e for e in REGISTER if e.experiment != "md-local" and not e.consistency]
    assert tally_row(out, "total")[4] == len(left_out) > 0
    assert tally_row(out, "md-joint")[4] == sum(e.experiment == "md-joint" for e in left_out)
    assert "not run here: md-joint," in out


def test_causes_name_each_kind_of_inconclusive_verdict_once():
    rule = Rule("x", ">", 1.0, "ours")

    def stored(claim):
        from dataclasses import asdict

        return asdict(claim)

    straddles = stored(Claim("a", rule=rule, effect=Effect(1.0, 0.5, 1.5, 5, "t")))
    one_unit = stored(Claim("b", rule=rule, effect=Effect(1.0, -np.inf, np.inf, 1, "one")))
    nothing = stored(Claim("c", rule=rule, effect=Effect(np.nan, np.nan, np.nan, 0, "t")))
    assert causes(straddles) == ["CI straddles the threshold"]
    assert causes(one_unit) == [leaf_reason(one_unit)] == ["one unit: no interval"]
    assert causes(nothing) == [leaf_reason(nothing)] == ["nothing finite measured"]
    assert leaf_reason(straddles) == (
        "the 95 % CI straddles 1; more seeds alone would not decide it (the estimate lies on "
        "the threshold or has no finite interval): a longer run or another design would"
    )
    both = Claim("d", parts=[Claim("", rule=rule, effect=Effect(1.0, 0.5, 1.5, 5, "t"))] * 2,
                 unmet=["stalled"])  # fmt: skip
    assert causes(stored(both)) == ["a precondition failed", "CI straddles the threshold"]


# --- claims --experiment / --verdict / --format ---------------------------------------------


def claims(fake, capsys, *args) -> str:
    assert main(["claims", "--out", str(fake), *args]) == 0
    return capsys.readouterr().out


def test_claims_csv_has_every_column_one_line_per_measured_part(fake, capsys):
    assert main(["reproduce", "md-local", "--quick", "--out", str(fake)]) == 0
    capsys.readouterr()
    lines = list(csv.DictReader(io.StringIO(claims(fake, capsys, "--format", "csv"))))
    entries = [e for e in REGISTER if e.experiment == "md-local"]
    md_local = [row for row in lines if row["experiment"] == "md-local"]
    assert [row["id"] for row in md_local] == [e.id for e in entries]
    assert [row["verdict"] for row in md_local] == ["supported", "not supported", "inconclusive"]
    row = md_local[2]
    assert (row["rule"], row["ci_low"], row["ci_high"], row["n"]) == ("x > 1", "0.5", "1.5", "5")
    why = (
        "the 95 % CI straddles 1; more seeds alone would not decide it (the estimate lies on "
        "the threshold or has no finite interval): a longer run or another design would"
    )
    assert row["reasons"] == row["part_reason"] == why
    assert row["scale"] == "quick" and row["threshold_from"] == "ours"
    # every register entry of the experiments that did not run: one line each, not run
    assert len(lines) == len(REGISTER)
    assert {row["verdict"] for row in lines if row["experiment"] != "md-local"} == {"not run"}


def test_claims_chosen_by_experiment_and_verdict_in_each_format(fake, capsys):
    assert main(["reproduce", "md-local", "md-joint", "--quick", "--out", str(fake)]) == 0
    capsys.readouterr()
    chosen = ["--experiment", "md-local,md-joint", "--verdict", "inconclusive"]
    rows = json.loads(claims(fake, capsys, *chosen, "--format", "json"))
    assert [(r["id"], r["verdict"]) for r in rows] == [("md-local/zero-init", "inconclusive")]
    assert rows[0]["parts"][0]["ci_low"] == 0.5 and rows[0]["parts"][0]["estimate"] == 1.0
    table = claims(fake, capsys, "--experiment", "md-joint", "--experiment", "md-local")
    body = [line for line in table.splitlines() if line.startswith("| md-")]
    assert len(body) == 6 and table.startswith("| id | paper, where |")  # the table alone
    not_run = claims(fake, capsys, "--verdict", "not-run", "--format", "csv")
    expected = [e for e in REGISTER if e.experiment != "md-local"]  # md-joint's: unanswered
    assert len(list(csv.DictReader(io.StringIO(not_run)))) == len(expected)
    whole = claims(fake, capsys)
    assert whole.startswith("# Claims register")  # no filter: the register as before


def test_verdict_words_in_the_help_are_the_ones_accepted():
    assert cli.VERDICT_WORDS == tuple(VERDICTS)


@pytest.mark.parametrize(
    "args, says",
    [
        (["--verdict", "maybe"], "--verdict 'maybe': not one of supported, not-supported, "),
        (["--verdict", "supported,bogus"], "--verdict 'bogus': not one of"),
        (["--experiment", "md-lokal"], "--experiment 'md-lokal': not one of md-local, "),
    ],
)
def test_claims_refuses_a_bad_choice_in_one_line_naming_it(fake, args, says, capsys):
    assert main(["claims", "--out", str(fake), *args]) == 2
    assert says in one_error_line(capsys)


def test_claims_refuses_a_bad_format_in_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["claims", "--format", "xlsx"])
    assert exit_.value.code == 2
    err = one_error_line(capsys)
    assert "--format: invalid choice: 'xlsx' (choose from 'md', 'csv', 'json')" in err


# --- errors name only what the user typed ---------------------------------------------------

DEFAULT_ROOT = "the results directory results/ (default; change with --out)"


def test_claims_without_out_names_the_default_not_the_option(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["claims"]) == 2
    err = one_error_line(capsys)
    assert err.startswith(f"attnbias: error: {DEFAULT_ROOT}: no such results root")
    (tmp_path / "results").mkdir()
    assert main(["claims"]) == 2
    assert f"{DEFAULT_ROOT} holds no experiment's summary" in one_error_line(capsys)
    assert main(["claims", "--out", "elsewhere"]) == 2
    assert "--out elsewhere: no such results root" in one_error_line(capsys)


def test_reproduce_into_an_experiment_directory_names_the_default(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "runs").mkdir(parents=True)
    assert main(["reproduce", "md-local", "--quick"]) == 2
    err = one_error_line(capsys)
    assert err.startswith(f"attnbias: error: {DEFAULT_ROOT} is one experiment's directory")


def test_svm_without_alpha_names_the_arrays_not_the_default_option(tmp_path, capsys):
    path = tmp_path / "p.npz"
    np.savez(path, X=np.ones((2, 3, 4)), z=np.ones((2, 4)))
    assert main(["svm", str(path)]) == 2
    err = one_error_line(capsys)
    assert "'auto'" not in err
    assert "has none of the arrays that give the tokens: alpha, or W (--alpha selected)" in err
    assert main(["svm", str(path), "--alpha", "optimal"]) == 2
    assert "--alpha optimal needs array(s) y+v" in one_error_line(capsys)


def test_an_unknown_command_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["reproduse"])
    assert exit_.value.code == 2
    assert "invalid choice: 'reproduse'" in one_error_line(capsys)


def test_svm_refuses_tokens_w_does_not_select(tmp_path, capsys):
    # W = 0 puts equal weight on every token: "the selected token" does not exist there
    P = gaussian_unit(3, 4, 5, seed=2)
    path = tmp_path / "p.npz"
    np.savez(path, X=P.X, z=P.z, W=np.zeros((5, 5)))
    assert main(["svm", str(path), "--alpha", "selected"]) == 2
    err = one_error_line(capsys)
    assert "selected token of sample 0 is tied between tokens 0 and 1" in err
    assert "give the tokens as alpha" in err


def test_svm_names_a_uint64_alpha_out_of_range_as_stored(tmp_path, capsys):
    P = gaussian_unit(2, 4, 5, seed=2)
    path = tmp_path / "p.npz"
    np.savez(path, X=P.X, z=P.z, alpha=np.array([2**64 - 1, 0], dtype=np.uint64))
    assert main(["svm", str(path)]) == 2
    assert "got 0..18446744073709551615" in one_error_line(capsys)


def test_claims_records_list_a_part_with_nothing_to_compare_with_why():
    """csv and json list a compound claim's not-applicable parts after its measured ones, as
    the Markdown register does: what it would have compared, "not applicable", and why."""
    from dataclasses import asdict

    from attnbias.cli_claims import part_records
    from attnbias.judging.claims import Claim, Effect, Rule, not_applicable

    measured = Claim("a", rule=Rule("q", ">", 1.0, "s"), effect=Effect(2.0, 1.5, 2.5, 5, "t"))
    idle = not_applicable("b reaches the level sooner", "the level is 0")
    parts = part_records(asdict(Claim("both", parts=[measured, idle])))
    assert [(p["part"], p["part_verdict"]) for p in parts] == [
        (1, "supported"), (2, "not applicable")]  # fmt: skip
    assert parts[1]["rule"] == "b reaches the level sooner"
    assert parts[1]["part_reason"] == "the level is 0" and parts[1]["ci_low"] is None
