"""local-global's further radii (issue 29): NGD's share of locally optimal gaussian_unit starts
staying at α′ rose with R and stayed below 0.9 at R = 16, so the sweep did not reach the
theorem's R₀. `local_radii` runs those starts (only those) at larger R; local-gaussian judges
every radius, and the other claims keep their own starts."""

from __future__ import annotations

import claim_cases
from attnbias.experiments import local_global


def by_id(rows, dominance, config) -> dict:
    return {c.id: c for c in local_global.claims(rows, dominance, config)}


def test_only_locally_optimal_gaussian_starts_run_at_the_further_radii():
    _, _, config = claim_cases.local_global_inputs()
    extra = (*config.radii, *config.local_radii)
    assert local_global.start_radii(config, "gaussian_unit", True) == extra
    assert local_global.start_radii(config, "gaussian_unit", False) == config.radii
    assert local_global.start_radii(config, "example1", True) == config.radii


def test_local_gaussian_is_judged_at_the_further_radii_too():
    """ℓ3-MD's share rises to 1 at the local-only radius: supported there (at the shipped
    radii alone it was inconclusive, R₀ beyond the sweep)."""
    rows, dominance, config = claim_cases.local_global_inputs()
    for r in rows:
        if r["local_radius"] and r["locally_optimal"]:
            r["outcome"] = "start"
    local = by_id(rows, dominance, config)["local-global/local-gaussian"]
    assert len(local.parts[1].parts) == len(config.radii) + len(config.local_radii)
    assert local.status == "supported"


def test_not_global_counts_only_the_starts_at_the_shared_radii():
    """The locally optimal starts run at the further radii are local-gaussian's: they do not
    enter the fraction of all gaussian_unit starts ending at the optimal tokens."""
    rows, dominance, config = claim_cases.local_global_inputs()
    before = by_id(rows, dominance, config)["local-global/not-global-gaussian"].effect
    for r in rows:
        if r["local_radius"]:
            r["outcome"] = "optimal"
    after = by_id(rows, dominance, config)["local-global/not-global-gaussian"].effect
    assert (after.estimate, after.n) == (before.estimate, before.n)


def test_local_gaussian_rules_say_they_are_some_setting_claims():
    """The rule column says the claim needs one radius per algorithm, with Holm's correction
    over the radii (issue 29): not that every radius must hold."""
    rows, dominance, config = claim_cases.local_global_inputs()
    local = by_id(rows, dominance, config)["local-global/local-gaussian"]
    k = len(config.radii) + len(config.local_radii)
    for algorithm in local.parts:
        assert algorithm.any_part
        for part in algorithm.parts:
            assert part.rule.quantity.endswith(f"(at some R, Holm over {k} radii)")
