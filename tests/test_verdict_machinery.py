"""The verdict machinery around the rules: consistency checks kept apart from paper verdicts."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from attnbias.experiment_registry import load_config
from attnbias.judging.claims import (
    NOT_SUPPORTED,
    SUPPORTED,
    Claim,
    Effect,
    Rule,
    is_consistency_check,
    paper_verdict,
)
from attnbias.store import config_key
from test_experiments import TINY


def effect(low, high):
    return Effect((low + high) / 2, low, high, 5, "test")


PAPER = Rule("x", ">", 1.0, "the paper's number")
CHECK = Rule("late slope / η", "<=", 1.0, "triangle inequality", consistency=True)


def test_a_rule_is_a_paper_rule_unless_flagged():
    assert PAPER.consistency is False and CHECK.consistency is True
    with pytest.raises(TypeError, match="consistency"):
        Rule("x", ">", 1.0, "s", consistency="yes")


@pytest.mark.parametrize("low, high", [(0.1, 0.15), (2.0, 2.05)])
def test_a_consistency_check_never_gives_a_paper_verdict(low, high):
    """Whatever its interval, a check's status is about the code: it has no paper verdict,
    alone, as parts, or stored as a dict."""
    alone = Claim("steps have length η", rule=CHECK, effect=mean([low, (low + high) / 2, high]))
    other = Claim("b", rule=CHECK, effect=mean([low, high]))
    parts = Claim("steps have length η", parts=[alone, other])
    for claim in (alone, parts):
        assert claim.status in (SUPPORTED, NOT_SUPPORTED)
        assert claim.consistency and is_consistency_check(asdict(claim))
        assert paper_verdict(claim) is None and paper_verdict(asdict(claim)) is None
    paper = Claim("p", rule=PAPER, effect=effect(low, high))
    assert not paper.consistency and paper_verdict(paper) == paper.status


def test_a_claim_mixing_paper_rules_and_checks_is_refused():
    with pytest.raises(ValueError, match="mixes consistency"):
        Claim("mixed", parts=[Claim("a", rule=PAPER, effect=effect(2, 3)),
                              Claim("b", rule=CHECK, effect=effect(0, 0.5))])  # fmt: skip
    with pytest.raises(ValueError, match="mixes consistency"):
        Claim("mixed", rule=PAPER, effect=effect(2, 3), parts=[Claim("b", rule=CHECK)])
    # an unmeasured claim is neither
    assert not Claim("n/a", None).consistency


# --- the register: counts from the verdicts, consistency checks apart ----------------------


def mean(values):
    from attnbias.judging.claims import mean_effect

    return mean_effect(values)


def stored(claims, quick=True) -> dict:
    """A summary of the claims as summary.json holds it (through JSON)."""
    import json

    summary = {"claims": [asdict(c) for c in claims]}
    if quick:
        summary["scale"] = "quick: a smoke run, not evidence"
    return json.loads(json.dumps(summary))


def register_tables(text: str) -> dict[str, list[list[str]]]:
    """The register's tables by section title, each row split into its cells."""
    import re

    tables, section = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:]
        elif line.startswith("| ") and not line.startswith(("| id |", "| --- |")):
            cells = re.split(r"(?<!\\) \| ", line[2:-2])
            tables.setdefault(section, []).append(cells)
    return tables


def tally(cells: list[str], words: list[str]) -> dict[str, int]:
    """How many verdict cells begin with each word (longest word first: "not supported" is not
    "supported"), read from the printed table."""
    found: dict[str, int] = {}
    for text in cells:
        text = text.removeprefix("**")
        word = next(w for w in sorted(words, key=len, reverse=True) if text.startswith(w))
        found[word] = found.get(word, 0) + 1
    return found


def headline(text: str, label: str) -> dict[str, int]:
    line = next(line for line in text.splitlines() if line.startswith(label))
    pairs = line[len(label) :].rstrip(".").split(", ")
    return {p.split(" ", 1)[1]: int(p.split(" ", 1)[0]) for p in pairs}


def test_the_register_headline_counts_the_rows_it_prints():
    """Issue 28: a quick-scale "**not supported** (…) (quick scale: not evidence)" row was
    counted as nothing. The headline is counted from the verdicts the rows print, and
    consistency checks are listed and counted apart."""
    from attnbias.judging.claims import CHECK_WORDS, STATUSES
    from attnbias.judging.register import NOT_RUN_WORDS, REGISTER, register_markdown

    low, high = [0.1, 0.2, 0.15], [3.0, 3.2, 3.1]
    ngd_joint = stored([
        Claim("a", id="ngd-joint/loss-to-zero", rule=PAPER, effect=mean(high)),
        Claim("b", id="ngd-joint/v-aligns", rule=PAPER, effect=mean(low)),
        Claim("c", id="ngd-joint/W-aligns", rule=PAPER, effect=mean(high), unmet=["stalled"]),
        # its own runs' numbers: parts equal to another row's would make that row its repeat
        Claim("d", id="ngd-joint/all-beat-gd", parts=[
            Claim("", rule=PAPER, effect=mean([0.11, 0.21, 0.16])),
            Claim("", rule=PAPER, effect=mean([3.01, 3.21, 3.11]))]),
    ])  # fmt: skip
    ngd_rates = stored([
        Claim("e", id="ngd-rates/eq12-norm-growth", rule=CHECK, effect=mean(low)),
        Claim("f", id="ngd-rates/eq12-linear-in-lr", rule=CHECK, effect=mean(high)),
    ])  # fmt: skip
    text = register_markdown({"ngd-joint": ngd_joint, "ngd-rates": ngd_rates}, "test")
    tables = register_tables(text)
    paper = tally([row[6] for row in tables["Claims tested here"]], [*STATUSES, NOT_RUN_WORDS])
    assert paper[NOT_SUPPORTED] == 2 and paper[SUPPORTED] == 1 and paper["inconclusive"] == 1
    assert headline(text, "Verdicts: ") == paper
    checks = tally([row[6] for row in tables["Consistency checks of the code"]],
                   [*CHECK_WORDS.values(), NOT_RUN_WORDS])  # fmt: skip
    # the register's other consistency checks are not run here: counted among the checks
    unrun = {e.id for e in REGISTER if e.consistency} - {"ngd-rates/eq12-linear-in-lr"}
    expected = {"check passes": 1, "check fails": 1, NOT_RUN_WORDS: len(unrun)}
    assert checks == expected == headline(text, "Checks: ")
    # a check's row never carries a paper verdict
    assert {row[0] for row in tables["Consistency checks of the code"]} == {
        "ngd-rates/eq12-norm-growth",
        "ngd-rates/eq12-linear-in-lr",
        *unrun,
    }


# --- reasons: every inconclusive verdict says why, part by part -----------------------------


def reasoned_claim():
    """ngd-joint/v-aligns as issue 29 found it: every interval far on the claim's side, every
    part inconclusive for a precondition of its own, which no output printed."""
    below = Rule("final misalignment", "<", 0.05, "ours")
    parts = [
        Claim("", rule=below, effect=mean([1e-3, 2e-3, 1.5e-3]),
              unmet=["below 0.05 already at step 2"]),
        Claim("", rule=below, effect=mean([1e-4, 2e-4, 1.5e-4]), unmet=["has not converged"]),
        Claim("", rule=below, effect=mean([0.01, 0.02, 0.015])),
    ]  # fmt: skip
    return Claim("v aligns", id="ngd-joint/v-aligns", parts=parts)


def test_a_part_level_reason_is_printed_in_the_register_and_by_reproduce(capsys):
    from attnbias.cli import print_verdicts
    from attnbias.judging.register import register_markdown

    claim = reasoned_claim()
    assert claim.status == "inconclusive" and not claim.unmet  # the reasons sit on the parts
    text = register_markdown({"ngd-joint": stored([claim])}, "test")
    rows = register_tables(text)["Claims tested here"]
    row = next(r for r in rows if r[0] == "ngd-joint/v-aligns")
    verdict, effect, sensitivity = row[6], row[5], row[7]
    for reason in ("below 0.05 already at step 2", "has not converged"):
        assert f"{reason} (1 of 3 parts)" in verdict and f"inconclusive ({reason})" in effect
    assert "robust" not in sensitivity and "precondition" in sensitivity
    print_verdicts({"claims": [asdict(claim)]})
    out = capsys.readouterr().out
    assert "[inconclusive] v aligns (below 0.05 already at step 2 (1 of 3 parts); has not " \
        "converged (1 of 3 parts))" in out  # fmt: skip


def test_a_straddling_interval_is_a_reason_too():
    from attnbias.judging.claims import reasons, verdict_columns

    claim = Claim("c", rule=PAPER, effect=mean([0.5, 1.5, 1.0]))
    assert claim.status == "inconclusive"
    why = (
        "the 95 % CI straddles 1; more seeds alone would not decide it (the estimate lies on "
        "the threshold or has no finite interval): a longer run or another design would"
    )
    assert reasons(asdict(claim)) == [why]
    assert verdict_columns(asdict(claim))["verdict"] == f"inconclusive ({why})"
    assert reasons(asdict(Claim("c", rule=PAPER, effect=mean([2.0, 3.0, 2.5])))) == []


# --- units: n counts seeds, cases sharing a seed are clustered ------------------------------


def test_cases_that_share_a_seed_are_one_unit():
    """Four step sizes on each of three seeds are three units: the seed's effect (its data and
    W₀) is shared by its cases. Pooled, the twelve cases would exclude 0; by seed they do not."""
    from scipy import stats

    from attnbias.judging.claims import clustered_mean_effect, t_effect

    seed_shift = {0: 1.0, 1: 0.1, 2: 0.4}
    values = [seed_shift[s] + 0.01 * k for s in seed_shift for k in range(4)]
    clusters = [s for s in seed_shift for _ in range(4)]
    clustered, pooled = clustered_mean_effect(values, clusters), t_effect(values)
    assert clustered.n == 3 and pooled.n == 12
    means = [sum(values[4 * s : 4 * s + 4]) / 4 for s in range(3)]
    interval = stats.t.interval(0.95, 2, loc=sum(means) / 3, scale=stats.sem(means))
    assert (clustered.low, clustered.high) == pytest.approx(interval)
    assert clustered.low < 0 < clustered.high and pooled.low > 0
    assert clustered.high - clustered.low > 2 * (pooled.high - pooled.low)
    with pytest.raises(ValueError, match="one label per value"):
        clustered_mean_effect([1.0, 2.0], [0])
    # a non-finite case is dropped, a seed with none left too
    assert clustered_mean_effect([1.0, float("nan"), 2.0], ["a", "b", "c"]).n == 2


# --- multiplicity: Holm's correction on the parts of a claim ---------------------------------


def at_distance(distance: float, threshold: float = 1.0, n: int = 10):
    """Ten values whose mean lies `distance` standard errors from `threshold` (below it when
    negative), with a fixed spread."""
    import numpy as np

    z = np.linspace(-1.0, 1.0, n)
    se = z.std(ddof=1) / np.sqrt(n)
    return z + threshold + distance * se


def part(distance: float) -> Claim:
    return Claim("", rule=PAPER, effect=mean(at_distance(distance)))


def test_holm_reaches_each_verdict_of_a_claim_with_k_parts():
    from scipy import stats

    from attnbias.judging.claims import INCONCLUSIVE

    # the t quantiles the distances are chosen between (9 degrees of freedom)
    t95, t975, t983 = (stats.t.ppf(1 - a / 2, 9) for a in (0.05, 0.05 / 2, 0.05 / 3))
    assert t95 < 2.5 < t975 < 2.8 < t983 < 6
    assert Claim("c", parts=[part(6), part(6), part(6)]).status == SUPPORTED
    assert Claim("c", parts=[part(6), part(-6), part(6)]).status == NOT_SUPPORTED
    assert Claim("c", parts=[part(6), part(0.5), part(6)]).status == INCONCLUSIVE
    # refuted at 95 % alone (2.5 standard errors below), not at Holm's 1 − 0.05/3
    alone = part(-2.5)
    assert alone.status == NOT_SUPPORTED
    claim = Claim("c", parts=[part(6), part(-2.5), part(6)])
    assert claim.status == INCONCLUSIVE and claim.parts[1].status == INCONCLUSIVE
    assert claim.parts[1].correction == {"support": 0.95, "refute": 1 - 0.05 / 3, "parts": 3}
    from attnbias.judging.claims import reasons, what_decides

    decide = what_decides(asdict(claim)["parts"][1], 1 - 0.05 / 3)
    assert decide.startswith("about ") and "seeds would decide it" in decide
    assert reasons(asdict(claim)) == [
        "not supported at 95 % alone, not at 98.33 %: Holm's correction for 3 parts; "
        f"{decide} (1 of 3 parts)"
    ]
    # step-down: once the clearest refutation is taken at 1 − 0.05/3, the next is judged at
    # 1 − 0.05/2 (Bonferroni would keep 1 − 0.05/3 and leave it undecided)
    claim = Claim("c", parts=[part(-6), part(-2.8), part(6)])
    assert [p.status for p in claim.parts] == [NOT_SUPPORTED, NOT_SUPPORTED, SUPPORTED]
    assert claim.parts[1].correction["refute"] == 1 - 0.05 / 2
    assert Claim("c", parts=[part(6), part(-2.8), part(6)]).parts[1].status == INCONCLUSIVE


@pytest.mark.slow
def test_holm_keeps_the_false_refutations_of_a_true_claim_near_the_nominal_rate():
    """Ten parts, each true (its mean exactly at the threshold's side boundary): judged
    alone at 95 % a claim needing all ten is refuted about 1 − 0.975¹⁰ = 22 % of the time;
    with Holm's correction at most 2.5 %."""
    import numpy as np

    rng = np.random.default_rng(7)
    refuted = 0
    for _ in range(100):
        parts = [Claim("", rule=PAPER, effect=mean(1.0 + rng.normal(0, 1, 8))) for _ in range(10)]
        refuted += Claim("c", parts=parts).status == NOT_SUPPORTED
    assert refuted <= 6  # 2.5 expected; about 22 uncorrected


def test_a_claim_at_some_setting_corrects_its_supports():
    from attnbias.judging.claims import INCONCLUSIVE

    some = Claim("faster at some setting", parts=[part(-6), part(2.5), part(-6)], any_part=True)
    assert part(2.5).status == SUPPORTED and some.status == INCONCLUSIVE
    assert some.parts[1].correction["support"] == pytest.approx(1 - 0.05 / 3)
    assert Claim("s", parts=[part(-6), part(6), part(-6)], any_part=True).status == SUPPORTED
    assert Claim("s", parts=[part(-6), part(-6)], any_part=True).status == NOT_SUPPORTED
    with pytest.raises(ValueError, match="any_part needs parts"):
        Claim("s", rule=PAPER, effect=mean([1, 2, 3]), any_part=True)


def test_every_effect_constructor_recomputes_its_interval_at_another_confidence():
    """What Holm's correction rests on: each constructor's interval at level L is the one
    scipy.stats gives at L, and intervals nest (a wider level, a wider interval)."""
    import numpy as np
    from scipy import stats

    from attnbias.judging import claims

    rng = np.random.default_rng(3)
    a, b = rng.normal(2, 1, 12), rng.normal(1, 1, 12)
    made = {
        "t": claims.mean_effect(a),
        "median": claims.median_effect(a),
        "paired": claims.paired_difference(a, b),
        "welch": claims.difference_of_means(a, b),
        "ratio": claims.ratio_effect(np.exp(a), np.exp(b)),
        "proportion": claims.proportion_effect(7, 12),
        "slope": claims.slope_effect(np.arange(12.0), a),
        "clustered": claims.clustered_mean_effect(a, np.arange(12) // 3),
    }
    for name, effect in made.items():
        wider = effect.at_confidence(0.99)
        assert wider.confidence == 0.99 and wider.estimate == effect.estimate, name
        assert wider.low < effect.low < effect.high < wider.high, name
    t = stats.t.interval(0.99, 11, loc=a.mean(), scale=stats.sem(a))
    assert (made["t"].at_confidence(0.99).low, made["t"].at_confidence(0.99).high) == \
        pytest.approx(t)  # fmt: skip
    cp = stats.binomtest(7, 12).proportion_ci(0.99, "exact")
    assert made["proportion"].at_confidence(0.99).low == pytest.approx(cp.low)
    # a point is the same at every level; numbers alone cannot be recomputed
    assert claims.exact_effect(3.0).at_confidence(0.99).low == 3.0
    assert Effect(1.0, 0.5, 1.5, 4, "by hand").at_confidence(0.99) is None


def test_a_property_of_every_step_is_reported_as_its_violations():
    from attnbias.judging.claims import verdict_columns, violations_effect, violations_rule

    rule = violations_rule("the optimal-token score does not decrease", "Lemma 5")
    holds = violations_effect([0.1, 0.0, 2.0, float("nan"), 0.3])
    assert (holds.estimate, holds.n) == (0, 4) and holds.low == holds.high == 0
    assert holds.method == "0 of 4 steps violate it, largest violation none (smallest margin 0)"
    assert violations_effect([0.2, 0.3]).method.endswith("(smallest margin 0.2)")
    broken = violations_effect([0.1, -1e-3, 2.0, -0.25])
    assert broken.method == "2 of 4 steps violate it, largest violation 0.25"
    assert Claim("l5", rule=rule, effect=holds).status == SUPPORTED
    claim = Claim("l5", rule=rule, effect=broken)
    assert claim.status == NOT_SUPPORTED  # one violation refutes a lemma: no share hides it
    assert "2 of 4 steps violate it, largest violation 0.25" in verdict_columns(
        asdict(claim))["effect"]  # fmt: skip


# --- n counts independent replications: distinct seeds ------------------------------------

REPLICATION_UNITS = ("seeds", "paired seeds", "runs")


def leaves_of(claim: dict) -> list[dict]:
    if claim.get("rule"):
        return [claim]
    return [leaf for part in claim.get("parts") or [] for leaf in leaves_of(part)]


def replication_errors(summary: dict, seeds: int) -> list[str]:
    """The measured parts of a summary's claims whose n counts more replications (seeds,
    paired seeds, runs of one method) than the experiment has distinct seeds — seeds ×
    settings or steps × samples counted as independent — or, where their evidence names its
    seeds, whose n is not the number of distinct seeds named."""
    errors = []
    for claim in summary["claims"]:
        for leaf in leaves_of(claim):
            effect, named = leaf.get("effect") or {}, (leaf.get("evidence") or {}).get("seeds")
            if named is not None and effect.get("n") != len(set(named)):
                errors.append(f"{claim['id']}: n = {effect.get('n')}, {len(set(named))} seeds")
            elif effect.get("unit") in REPLICATION_UNITS and effect["n"] > seeds:
                errors.append(f"{claim['id']}: n = {effect['n']} {effect['unit']} of {seeds}")
    return errors


def test_n_counting_seeds_times_settings_is_caught():
    """Issue 29 class 7: "n = 12 seeds" for 3 seeds × 4 step sizes."""
    import numpy as np

    from attnbias.judging.claims import clustered_mean_effect, mean_effect

    values, seeds = np.linspace(1.0, 2.0, 12), np.repeat([0, 1, 2], 4)
    pooled = Claim("c", id="x/pooled", rule=PAPER, effect=mean_effect(values))
    clustered = Claim("c", id="x/clustered", rule=PAPER,
                      effect=clustered_mean_effect(values, seeds))  # fmt: skip
    named = Claim("c", id="x/named", rule=PAPER, effect=mean_effect(values[:4]),
                  evidence={"seeds": [0, 1, 2, 2]})  # fmt: skip
    errors = replication_errors(stored([pooled, clustered, named]), seeds=3)
    assert errors == ["x/pooled: n = 12 seeds of 3", "x/named: n = 4, 3 seeds"]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TINY))
def test_every_reported_n_counts_distinct_seeds(name, tmp_path):
    """Every claim of every synthetic experiment (at tiny scale): its n counts independent
    replications, never more than the experiment's distinct seeds."""
    from attnbias.experiment_registry import load_config
    from attnbias.experiments.base import run_experiment

    config = load_config(name, quick=True, overrides=TINY[name])
    summary = run_experiment(config, tmp_path)
    # a row judged on fresh confirmation seeds counts those (ngd-fixed's polyak-faster)
    seeds = max(config["seeds"], config.get("confirmation_seeds", 0))
    assert replication_errors(summary, seeds) == []


def test_the_register_names_the_code_version_and_config_of_each_experiment_s_summary():
    """Issue 29 class 10: a row's summary may be stale; the register says which code made it."""
    from attnbias.judging.register import register_markdown

    summary = {**stored([reasoned_claim()], quick=False), "code_version": "0.1.0+gabc1234",
               "config_hash": "0123456789abcdef"}  # fmt: skip
    forged = {**stored([reasoned_claim()]), "code_version": "x|" * 100}
    text = register_markdown({"ngd-joint": summary, "ngd-rates": forged}, "test")
    rows = register_tables(text)["Where the verdicts come from"]
    current = config_key(load_config("ngd-joint").to_dict())
    assert ["ngd-joint", "0.1.0+gabc1234", "0123456789abcdef", f"no: {current}", "full"] in rows
    forged_row = next(r for r in rows if r[0] == "ngd-rates")
    assert len(forged_row) == 5 and forged_row[1].count("x") == 32  # escaped, bounded
    assert forged_row[4].startswith("quick")
    # a summary not made from the current default config is named under the counts
    assert "Not from the current default config: the rows of ngd-joint, ngd-rates (" in text


def test_a_summary_of_the_current_default_config_is_not_named_as_another():
    """The rows of a summary made from `attnbias reproduce NAME`'s config (full or quick) are
    the current default's; only another config's are named."""
    from attnbias.judging.register import other_configs, register_markdown

    full = {**stored([reasoned_claim()], quick=False),
            "config_hash": config_key(load_config("ngd-joint").to_dict())}  # fmt: skip
    quick = {**stored([reasoned_claim()]),
             "config_hash": config_key(load_config("ngd-rates", quick=True).to_dict())}  # fmt: skip
    changed = load_config("ngd-rates", quick=True, overrides={"seeds": 7}).to_dict()
    assert other_configs({"ngd-joint": full, "ngd-rates": quick}) == []
    text = register_markdown({"ngd-joint": full, "ngd-rates": quick}, "test")
    assert "Not from the current default config" not in text
    rows = register_tables(text)["Where the verdicts come from"]
    assert [row[3] for row in rows[1:]] == ["yes", "yes"]  # below the header
    assert other_configs({"ngd-rates": {**quick, "config_hash": config_key(changed)}}) == [
        "ngd-rates"
    ]
