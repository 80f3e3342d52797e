"""Every claim rule reaches each of its verdicts on constructed inputs (tests/claim_cases.py)."""

from __future__ import annotations

import importlib
from dataclasses import asdict

import numpy as np
import pytest

import claim_cases
from attnbias.curves import Curves
from attnbias.judging.claims import (
    INCONCLUSIVE,
    STATUSES,
    SUPPORTED,
    Claim,
    Effect,
    Rule,
    not_applicable,
    reasons,
    verdict_columns,
)
from attnbias.judging.verdicts import ngd
from attnbias.judging.verdicts.common import steps_to_reach
from attnbias.judging.verdicts.tuning import untimed
from claim_cases import cases


def function(name: str):
    module, attr = name.split(".")
    return getattr(importlib.import_module(f"attnbias.judging.verdicts.{module}"), attr)


CASES = [(name, k, *case) for name, listed in cases().items() for k, case in enumerate(listed)]


@pytest.mark.parametrize("name, k, expected, args, kwargs", CASES, ids=[
    f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])  # fmt: skip
def test_rule_reaches_its_verdict(name, k, expected, args, kwargs):
    claim = function(name)(*args, **kwargs)
    assert isinstance(claim, Claim) and claim.status in STATUSES
    assert claim.status == expected, _explain(claim)
    assert_reasons_printed(asdict(claim))
    if claim.measured and not claim.unmet:  # a measured verdict states its rule and effect
        for part in [claim, *claim.parts]:
            if part.rule is not None and not part.unmet:
                assert part.rule.source and part.effect is not None and part.effect.n >= 1


def unmet_anywhere(claim: dict) -> list[str]:
    """Every failed precondition of an inconclusive claim or of its inconclusive parts."""
    if claim["status"] != INCONCLUSIVE:
        return []
    return [*claim["unmet"], *(u for part in claim["parts"] for u in unmet_anywhere(part))]


def assert_reasons_printed(claim: dict) -> None:
    """An inconclusive verdict prints why: the claim's verdict cell (and the line `attnbias
    reproduce` prints) names a reason, and every failed precondition of it or of an
    inconclusive part is printed in its row."""
    columns = verdict_columns(claim)
    if claim["status"] == INCONCLUSIVE:
        why = reasons(claim)
        assert why and f"({'; '.join(why)})" in columns["verdict"], columns["verdict"]
        assert "robust" not in columns["sensitivity"] or not unmet_anywhere(claim)
    for unmet in unmet_anywhere(claim):
        assert unmet in columns["verdict"], (unmet, columns)
    for part in claim["parts"]:  # each part's own reasons on its line of the effect column
        for unmet in unmet_anywhere(part):
            assert unmet in columns["effect"] or len(claim["parts"]) < 2, (unmet, columns)


def _explain(claim: Claim) -> str:
    lines = [f"{claim.status}: {claim.claim} unmet={claim.unmet}"]
    for part in claim.parts or [claim]:
        if part.rule is not None:
            lines.append(f"  {part.status}: {part.rule.text}; {part.effect.text}")
    return "\n".join(lines)


def test_every_rule_function_has_cases():
    """Every public function of a rule module that returns a Claim has constructed cases."""
    import inspect
    import pkgutil

    from attnbias.judging import verdicts

    listed, missing = set(cases()), []
    for info in pkgutil.iter_modules(verdicts.__path__):
        mod = importlib.import_module(f"{verdicts.__name__}.{info.name}")
        for n, f in vars(mod).items():
            if (
                inspect.isfunction(f)
                and f.__module__ == mod.__name__
                and not n.startswith("_")
                and inspect.signature(f).return_annotation in ("Claim", Claim)
                and f"{info.name}.{n}" not in listed
            ):
                missing.append(f"{info.name}.{n}")
    assert not missing, f"rule functions without cases: {missing}"


def test_a_loss_at_the_float_floor_stays_supported_and_says_its_interval_is_the_floor():
    """A final loss that underflowed is below any threshold (the verdict stands), but its
    interval describes float64's floor, which the register's effect column says."""
    groups = {k: claim_cases.ngd_group(1e-4, loss_final=1e-5, seed=s) for k, s in (
        ("GD", 0), ("NGD", 10), ("Polyak", 20), ("NGD-mom", 30))}  # fmt: skip
    groups["NGD"].values["loss"][:, -1] = 5e-324  # its last recorded loss underflowed
    claim = ngd.joint_convergence(groups, "loss", 1e-3, "loss to zero", ngd.LOSS_RATE)
    notes = [p.evidence.get("effect_note", "") for p in claim.parts]
    assert claim.status == SUPPORTED
    assert "floor" in notes[1] and not any(notes[k] for k in (0, 2, 3))
    assert "floor" in verdict_columns(asdict(claim))["effect"].split("<br>")[1]


def test_cap_onsets_place_the_step_polyaks_cap_binds_from():
    """`ngd.cap_onsets` (what `unless_cap_binds` is handed): with κ = ‖∇L‖/L = 1, γ_b = 1e6 and
    c = 1 the cap binds where L ≤ 1e-6, here from step 2 on; a loss that never gets there
    never binds; without a finite κ, from where the loss stops changing."""
    from attnbias.curves import Curves

    steps = np.array([0, 1, 2, 4, 8])
    falling = np.array([[0.7, 1e-3, 1e-6, 1e-9, 1e-12], [0.7, 0.5, 0.4, 0.3, 0.2]])
    onsets = ngd.cap_onsets(Curves(steps, {"loss": falling}), np.array([1.0, 1.0]), 1.0, 1e6)
    assert onsets.tolist() == [2.0, np.inf]
    frozen = np.array([[0.7, 1e-3, 1e-5, 1e-5, 1e-5]])
    assert ngd.cap_onsets(Curves(steps, {"loss": frozen}), np.array([np.nan]), 1.0, 1e6) == 2.0


def test_a_count_of_steps_is_whole_where_the_grid_records_every_step():
    """`common.steps_to_reach`: a run crossing the level between recorded steps 1 and 2 takes
    2 steps (no fraction of a step), so two such runs tie; between steps 2 and 4 the time is
    interpolated log-linearly."""
    steps = np.array([0, 1, 2, 4, 8])
    c = Curves(steps, {"m": np.array([[1.0, 0.5, 0.1, 0.01, 0.001], [1.0, 0.2, 0.15, 0.1, 0.1]])})
    times = steps_to_reach(c, "m", 0.12)
    assert times[0] == 2.0  # 0.5 at step 1, 0.1 at step 2
    assert 2.0 < times[1] < 4.0  # 0.15 at step 2, 0.1 at step 4: interpolated
    expected = np.exp(np.log(2) + (np.log(0.12) - np.log(0.15)) * np.log(2) / np.log(0.1 / 0.15))
    assert times[1] == pytest.approx(expected, rel=1e-12)


def test_a_level_most_pairs_tie_at_says_so():
    """`tuning.untimed`: where both runs of most pairs reach the level at the same step, a
    straddling interval is a tie, not a lack of seeds; at half or fewer, or where the
    interval decides, nothing is said."""
    straddles, decides = Effect(1.1, 0.9, 1.4, 4, "t"), Effect(1.3, 1.05, 1.6, 4, "t")
    most = untimed(np.array([2.0, 2.0, 1.0, 8.0]), np.array([2.0, 2.0, 1.0, 3.0]), straddles)
    assert most and "in 3 of 4 pairs" in most[0] and "tie" in most[0]
    assert untimed(np.array([2.0, 2.0, 1.0, 8.0]), np.array([2.0, 2.0, 1.0, 3.0]), decides) == []
    assert untimed(np.array([2.0, 2.0, 8.0, 8.0]), np.array([2.0, 2.0, 3.0, 3.0]), straddles) == []
    assert untimed(np.array([np.inf, np.inf]), np.array([np.inf, np.inf]), straddles) == []
    assert untimed(np.array([]), np.array([]), straddles) == []


def test_a_part_with_nothing_to_compare_is_printed_with_its_reason():
    """The register lists a compound claim's not-applicable parts after its measured ones,
    each with its reason, not only the parts that have a rule."""
    measured = Claim("a", rule=Rule("q", ">", 1.0, "s"), effect=None, unmet=["too few runs"])
    idle = not_applicable("b reaches the level sooner", "the level is 0")
    columns = verdict_columns(asdict(Claim("both", parts=[measured, idle])))
    assert columns["rule"].split("<br>") == ["q > 1", "b reaches the level sooner"]
    assert columns["effect"].split("<br>")[1] == "— → not applicable (the level is 0)"
    # a claim that is itself not applicable has no rows of parts to list
    assert verdict_columns(asdict(idle))["effect"] == "—"


def test_thm3_rate_says_which_reading_of_the_lost_bound_its_interval_meets():
    """joint-rates' note: an interval between the squared order's bound and the unsquared
    one's meets one reading and not the other, and the note says which."""
    from attnbias.experiments.joint_rates import thm3_readings
    from attnbias.judging.claims import Effect

    between = thm3_readings(Effect(-0.48, -0.55, -0.42, 48, "t"), -0.63, -0.315)
    assert between.startswith("the interval does not lie wholly below it;")
    assert "would be -0.315 and the interval lies below it" in between
    assert "does not lie wholly below it" in thm3_readings(None, -0.63, -0.315).split(";")[1]
