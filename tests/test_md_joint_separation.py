"""md-joint/W-own-p-svm's threshold tells the compared SVMs apart (issue 29): it is ¼ of the
divergence between the own-p ℓp-AttSVM and the nearest other p's, from the solutions the run
stored, so that a run ending at the other p's SVM fails it."""

from __future__ import annotations

import numpy as np
import pytest

import claim_cases
from attnbias.data import joint_toy
from attnbias.experiments import md_joint
from attnbias.judging.claims import NOT_SUPPORTED, SUPPORTED
from attnbias.metrics import directional_bregman
from attnbias.store import RunRecord
from attnbias.svm import att_svm, head_svm

LABELS = ("1.75", "2", "3")
NAMES = {f"ℓ{p}-MD": p for p in LABELS}


@pytest.fixture(scope="module")
def solutions() -> dict[str, np.ndarray]:
    problem = joint_toy()
    return {p: att_svm(problem.X, problem.z, problem.opt, norm=float(p)).W for p in LABELS}


def records(solutions) -> list[RunRecord]:
    arrays = {f"W_mm_{p}": W for p, W in solutions.items()}
    return [RunRecord(n, {"algorithm": {"name": n}}, None, arrays, {}) for n in NAMES]


def test_the_separation_is_the_divergence_from_the_nearest_other_svm(solutions):
    apart = md_joint.svm_separation(records(solutions), NAMES)
    for name, p in NAMES.items():
        others = {
            q: float(directional_bregman(solutions[p], solutions[q], float(p)))
            for q in LABELS
            if q != p
        }
        nearest = min(others, key=others.get)
        assert apart[name] == (f"ℓ{nearest}", pytest.approx(others[nearest]))
    # the toy's ℓ1.75 and ℓ2 SVMs are near: a fixed 0.01 could not tell them apart
    assert apart["ℓ1.75-MD"][0] == "ℓ2" and apart["ℓ1.75-MD"][1] < 0.01


def test_a_run_at_the_other_svm_fails_the_rule_and_one_at_its_own_passes(solutions):
    apart = md_joint.svm_separation(records(solutions), NAMES)
    at_own = claim_cases.joint_groups(div=1e-5, runs=3)
    (own, *_) = md_joint.claims(at_own, NAMES, apart, apart)
    assert own.status == SUPPORTED
    for part, name in zip(own.parts, NAMES):
        assert part.rule.threshold == pytest.approx(0.25 * apart[name][1])
        assert f"{apart[name][1]:.3g}" in part.rule.source
    # every run ended at its nearest other p's SVM: its divergence is their separation
    elsewhere = claim_cases.joint_groups(div=min(d for _, d in apart.values()), runs=3)
    (other, *_) = md_joint.claims(elsewhere, NAMES, apart, apart)
    assert other.status == NOT_SUPPORTED


def test_an_unsolved_svm_leaves_no_separation(solutions):
    unsolved = dict(solutions, **{q: np.full_like(solutions[q], np.nan) for q in ("2", "3")})
    apart = md_joint.svm_separation(records(unsolved), NAMES)
    assert apart["ℓ1.75-MD"][0] == "" and np.isnan(apart["ℓ1.75-MD"][1])


def test_the_toys_head_svms_differ_by_p_and_v_is_judged_against_them():
    """On the toy the ℓ1.75, ℓ2 and ℓ3 head SVMs are apart, so v's level (¼ of the nearest
    other p's divergence) fails a v that ended at another p's head SVM; the separation of
    vectors is computed entrywise like the matrices'."""
    problem = joint_toy()
    heads = {p: np.asarray(head_svm(problem.X, problem.y, problem.opt, float(p)).v).ravel()
             for p in LABELS}  # fmt: skip
    arrays = {f"v_mm_{p}": v for p, v in heads.items()}
    stored = [RunRecord(n, {"algorithm": {"name": n}}, None, arrays, {}) for n in NAMES]
    apart_v = md_joint.svm_separation(stored, NAMES, "v_mm")
    for name, p in NAMES.items():
        other, separation = apart_v[name]
        q = other.removeprefix("ℓ")
        assert separation == pytest.approx(
            float(directional_bregman(heads[p], heads[q], float(p), dim=-1))
        )
        assert separation > 1e-3  # apart, not the same direction for every p
    groups = claim_cases.joint_groups(div=1e-5, runs=3)
    (_, v_own, _) = md_joint.claims(groups, NAMES, apart_v, apart_v)
    assert v_own.status == SUPPORTED
    assert v_own.parts[0].effect.n == 3  # n = seeds
    at_other = claim_cases.joint_groups(div=min(d for _, d in apart_v.values()), runs=3)
    (_, v_other, _) = md_joint.claims(at_other, NAMES, apart_v, apart_v)
    assert v_other.status == NOT_SUPPORTED
