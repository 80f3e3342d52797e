"""Every claim function's verdict on fabricated curves and table rows (no training): each claim
is supported where the numbers bear it out, not supported where they do not, and "not
applicable" where there is nothing to compare. Inverting any comparison in a claim fails the
"holds" case (every conjunct is true there) or the "fails" case."""

import math

import numpy as np
import pytest

from attnbias.experiments import (
    atlas,
    kq_nuclear,
    md_joint,
    md_local,
    ngd_fixed,
    ngd_joint,
    text_finetune,
    text_md,
    vision,
)
from attnbias.experiments.runs import Curves, curves
from attnbias.store import RunRecord, tidy

STEPS = np.array([0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000])


def group(seeds=2, **metrics) -> Curves:
    """Curves of `seeds` identical runs; metrics given as functions of the step."""
    t = STEPS.astype(float)
    return Curves(STEPS, {m: np.tile(f(t), (seeds, 1)) for m, f in metrics.items()})


def constant(c):
    return lambda t: np.full_like(t, c)


def falling(start, end):
    return lambda t: start + (end - start) * t / t[-1]


def md_local_claims(holds: bool, ps=(2.0, 3.0)):
    names = [f"ℓ{p:g}-MD" for p in ps]
    labels = [f"{p:g}" for p in ps]
    own, other = (0.01, 0.5) if holds else (0.1, 0.001)
    random = {
        name: group(
            **{f"divergence/{m}": falling(1.0, own if m == label else other) for m in labels}
        )
        for name, label in zip(names, labels)
    }
    zero = {
        name: group(seeds=1, **{f"divergence/{m}": constant(own) for m in labels}) for name in names
    }
    return md_local.claims(random, zero, list(ps), names, 0.05)


def md_joint_claims(holds: bool):
    div, score = (0.001, 0.999) if holds else (0.5, 0.5)
    names = {"ℓ2-MD": "2", "ℓ3-MD": "3"}
    groups = {
        name: group(
            **{
                f"divergence/{p}": constant(div),
                f"divergence_v/{p}": constant(div),
                "score/opt": constant(score),
                "prob": constant(score),
            }
        )
        for name, p in names.items()
    }
    return md_joint.claims(groups, names, 0.01)


NGD_CONFIG = {
    "reference": "NGD",
    "baseline": "GD",
    "fast": "Polyak",
    "momentum": "NGD-mom",
    "target_alignment": 0.99,
    "early_fraction": 0.1,
}


def ngd_fixed_claims(holds: bool):
    """Holds: NGD aligns as 1/t with ‖W_t‖ = t, GD slower, Polyak and NGD-mom ahead of NGD, and
    1 − score = e^{−‖W_t‖/100} (Lemma 1); fails: everything the other way round and the score
    moving away from 1 as ‖W_t‖ grows."""
    saturating = lambda t: 1 - 0.5 * np.exp(-0.01 * t)  # noqa: E731
    leaving = lambda t: 0.5 * np.exp(-0.01 * t)  # noqa: E731
    score = {"score/opt": saturating if holds else leaving}
    fast = {"alignment/2": lambda t: 1 - 0.5 / (1 + t), "norm/2": lambda t: t, **score}
    slow = {"alignment/2": lambda t: 1 - 0.5 / (1 + t) ** 0.1, "norm/2": lambda t: t**0.2}
    early = {"alignment/2": lambda t: 1 - 0.1 / (1 + t), "norm/2": lambda t: t}
    late = {"alignment/2": constant(0.1), "norm/2": lambda t: t}
    groups = {
        "GD": group(**(slow if holds else fast)),
        "NGD": group(**({**fast, **score} if holds else {**slow, **score})),
        "NGD-mom": group(**(early if holds else late)),
        "Polyak": group(**(early if holds else late)),
    }
    return ngd_fixed.claims(groups, NGD_CONFIG)


def ngd_joint_claims(holds: bool, names=("GD", "NGD", "Polyak")):
    """Holds: the fast algorithms reach loss 1e-4 and alignment 0.999, Polyak lower and higher
    still; fails: they stay at 0.5 (Polyak no better than NGD) while GD reaches 0.01."""
    fast_loss, gd_loss, align = (1e-4, 0.1, 0.999) if holds else (0.5, 0.01, 0.5)
    config = {
        "baseline": "GD",
        "fastest": "Polyak",
        "target_alignment": 0.99,
        "target_loss": 1e-3,
    }

    def end(name, value, best):
        return best if holds and name == "Polyak" else value

    groups = {
        name: group(
            loss=falling(0.7, gd_loss if name == "GD" else end(name, fast_loss, fast_loss / 10)),
            **{
                m: constant(end(name, align, 0.9999))
                for m in ("alignment/2", "alignment_v/2", "score/opt")
            },
        )
        for name in names
    }
    return ngd_joint.claims(groups, config)


def kq_nuclear_claims(holds: bool):
    better, worse = (np.array([0.9, 0.8]), np.array([0.5, 0.4]))
    if not holds:
        better, worse = worse, better
    final = {
        kq_nuclear.KQ: {"nuc": better, "2": worse},
        kq_nuclear.DIRECT: {"2": better, "nuc": worse},
    }
    return kq_nuclear.claims(final)


def text_md_row(p, accuracy, keyword, above, small):
    return {
        "p": p,
        "best_accuracy": [accuracy, 1.0],
        "reached_target": 5,
        "runs": 5,
        "keyword_normalised": [keyword, 0.01],
        "keyword_raw": [keyword / 10, 0.001],
        "keyword_chance_normalised": 0.2,
        "keyword_chance_raw": 0.05,
        **{f"above_abs_{m}": above for m in "KQV"},
        **{f"above_rel_{m}": above for m in "KQV"},
        **{f"small_{m}": small for m in "KQV"},
        **{f"hoyer_{m}": small for m in "KQV"},
    }


def test_text_md_evidence_keeps_each_quantity_apart():
    """The evidence names what each claim compared: the normalised key-word score beside the
    raw one, counts above 0.06 beside those above 3 RMS (one must not overwrite the other)."""
    lo = text_md_row(1.1, 84.0, 0.4, 100, 0.2) | {"above_rel_K": 7, "hoyer_K": 0.9}
    mid = text_md_row(2.0, 81.0, 0.3, 200, 0.05)
    _, _, keyword, count, share = text_md.text_md_claims({1.1: lo, 2.0: mid})
    assert keyword.evidence["keyword_normalised"]["l1.1"] == [0.4, 0.01]
    assert keyword.evidence["keyword_raw"]["l1.1"] == [0.04, 0.001]
    assert count.evidence["K"] == {"above_abs_K": {"l1.1": 100, "l2": 200},
                                   "above_rel_K": {"l1.1": 7, "l2": 200}}  # fmt: skip
    assert share.evidence["K"]["small_K"] == {"l1.1": 0.2, "l2": 0.05}


def test_text_md_accuracy_claims_say_the_lead_in_pooled_stds():
    lo, mid = text_md_row(1.1, 84.0, 0.4, 100, 0.2), text_md_row(2.0, 81.0, 0.3, 200, 0.05)
    hi = text_md_row(3.0, 80.0, 0.3, 100, 0.2) | {"best_accuracy": [80.0, 0.0]}
    best, every, *_ = text_md.text_md_claims({1.1: lo, 2.0: mid, 3.0: hi})
    assert best.evidence["lead_over_l2_in_pooled_stds"] == {"l1.1": pytest.approx(3.0)}
    lead = every.evidence["lead_over_l2_in_pooled_stds"]
    assert lead == {"l1.1": pytest.approx(3.0), "l3": pytest.approx(-1 / math.sqrt(0.5))}
    assert text_md.standardized_difference([1.0, 0.0], [1.0, 0.0]) == 0.0
    assert text_md.standardized_difference([2.0, 0.0], [1.0, 0.0]) == math.inf
    assert math.isnan(text_md.standardized_difference([math.nan, 0.0], [1.0, 0.0]))


def text_md_claims(holds: bool):
    """Holds: ℓ1.1 and ℓ3 above ℓ2 in best accuracy, ℓ1.1 more key-word attention, fewer
    entries above 0.06 and more near-zero ones; fails: every comparison the other way."""
    lo, mid = text_md_row(1.1, 84.0, 0.4, 100, 0.2), text_md_row(2.0, 81.0, 0.3, 200, 0.05)
    hi = text_md_row(3.0, 82.0 if holds else 80.0, 0.3, 150, 0.1)
    rows = {1.1: lo, 2.0: mid, 3.0: hi} if holds else {1.1: mid | {"p": 1.1}, 2.0: lo, 3.0: hi}
    return text_md.text_md_claims(rows, {1.1: lo, 2.0: mid})


def loss_rows(dataset, growth=1.1, **loss):
    return [
        {
            "dataset": dataset,
            "optimizer": name,
            "final_train_loss": [value, 0.01],
            "norm_growth": {"layer0": growth, "layer1": growth},
        }
        for name, value in loss.items()
    ]


def text_finetune_claims(holds: bool):
    if holds:
        rows = loss_rows("sst2", 1.1, SGD=1.0, SNGD=0.2, SPS=0.3, Adam=0.2)
    else:
        rows = loss_rows("sst2", 0.9, SGD=0.1, SNGD=0.5, SPS=0.6, Adam=0.1)
    return text_finetune.finetune_claims(rows, ["sst2"])


def vision_claims(holds: bool):
    loss = (
        {"SGD": 0.5, "SNGD": 0.8, "Adam": 0.4} if holds else {"SGD": 0.5, "SNGD": 0.3, "Adam": 0.1}
    )
    return vision.vision_claims(loss_rows("mnist", 1.1 if holds else 0.9, **loss), ["mnist"])


ATLAS_OWN = {"SignGD": "inf", "SpectralDescent": "spectral"}
ATLAS_LIKE = {"Adam": "SignGD", "Muon": "SpectralDescent"}


def atlas_claims(holds: bool, names=("SignGD", "SpectralDescent", "Adam", "Muon")):
    """Owners' own-norm gaps fall as 1/t (holds) or stay at 0.5 above the others' 0.1 (fails);
    Adam and Muon end at 0.01 in their model's norm (holds) or in ℓ2 (fails)."""
    labels = ["2", "inf", "spectral"]

    def gaps(name):
        if name in ATLAS_OWN:
            own = (lambda t: 1.0 / (1.0 + t)) if holds else constant(0.5)
            return {
                f"gap/{m}": own if m == ATLAS_OWN[name] else constant(0.5 if holds else 0.1)
                for m in labels
            }
        best = ATLAS_OWN[ATLAS_LIKE[name]] if holds else "2"
        return {f"gap/{m}": constant(0.01 if m == best else 0.3) for m in labels}

    groups = {name: group(**gaps(name)) for name in names}
    return atlas.claims(groups, labels, ATLAS_OWN, ATLAS_LIKE, 0.05, 0.1, -0.25)


CLAIMS = {
    "atlas": atlas_claims,
    "md-local": md_local_claims,
    "md-joint": md_joint_claims,
    "ngd-fixed": ngd_fixed_claims,
    "ngd-joint": ngd_joint_claims,
    "kq-nuclear": kq_nuclear_claims,
    "text-md": text_md_claims,
    "text-finetune": text_finetune_claims,
    "vision": vision_claims,
}


@pytest.mark.parametrize(("holds", "status"), [(True, "supported"), (False, "not supported")])
@pytest.mark.parametrize("name", CLAIMS)
def test_claims_follow_the_numbers(name, holds, status):
    """Where the numbers bear a claim out it is supported, where they do not it is not."""
    claims = CLAIMS[name](holds=holds)
    assert claims and [(c.claim, c.status) for c in claims] == [(c.claim, status) for c in claims]
    assert all(c.supported is holds for c in claims)


def test_nothing_to_compare_is_not_applicable():
    near, row, adam, muon, rate = atlas_claims(holds=True, names=("SignGD",))
    assert near.supported is True and rate.supported is True
    assert row.status == adam.status == muon.status == "not applicable"
    (_, off, _) = md_local_claims(holds=True, ps=(2.0,))
    assert off.supported is None and off.status == "not applicable"
    for claim in ngd_joint_claims(holds=True, names=("GD",)):
        assert claim.supported is None and claim.status == "not applicable"
    for claim in text_md.text_md_claims({1.1: text_md_row(1.1, 84.0, 0.4, 100, 0.2)}):
        assert claim.status == "not applicable" and claim.id.startswith("text-md/")
    rows = loss_rows("mnist", SGD=0.5, Adam=0.4)
    statuses = [c.status for c in vision.vision_claims(rows, ["mnist"])]
    assert statuses == ["not applicable", "not applicable", "supported"]
    statuses = [
        c.status for c in text_finetune.finetune_claims(loss_rows("sst2", SGD=1.0), ["sst2"])
    ]
    assert statuses == ["not applicable", "not applicable", "supported"]


def record(key, algorithm, value, status=None):
    table = tidy(STEPS, {"alignment/2": np.full(len(STEPS), value)})
    info = {} if status is None else {"status": status}
    return RunRecord(key, {"algorithm": {"name": algorithm}}, table, {}, info)


def test_diverged_runs_are_left_out_of_the_curves_and_counted():
    records = [
        record("a", "NGD", 0.9),
        record("b", "NGD", np.nan, "diverged"),
        record("c", "GD", np.nan, "diverged"),
    ]
    groups = curves(records)
    assert groups["NGD"].values["alignment/2"].shape == (1, len(STEPS))
    assert groups["NGD"].diverged == 1 and groups["NGD"].lowest_final("alignment/2") == 0.9
    assert groups["GD"].diverged == 1 and len(groups["GD"].values["alignment/2"]) == 0
    assert np.isnan(groups["GD"].lowest_final("alignment/2"))
    assert np.isnan(groups["GD"].mean("alignment/2")).all()


def test_the_report_counts_not_applicable_claims_apart():
    from attnbias.experiments.report import verdict_counts

    claims = [{"supported": True}, {"supported": False}, {"supported": None}]
    summary = {"claims": claims, "diverged": [{}], "scale": "quick: a smoke run, not evidence"}
    assert verdict_counts(summary) == (
        "1/2 claims supported, 1 not applicable; 1 diverged run(s) left out "
        "(quick: a smoke run, not evidence)"
    )


def test_every_claim_has_a_unique_id_the_register_lists():
    from attnbias.experiments.claims_register import REGISTER, matching

    claims = [c for make in CLAIMS.values() for c in make(holds=True)]
    ids = [c.id for c in claims]
    assert all(ids) and len(set(ids)) == len(ids), ids
    summaries = {}
    for c in claims:
        summaries.setdefault(c.id.split("/")[0], {"claims": []})["claims"].append({"id": c.id})
    unlisted = [
        i
        for i in ids
        if not any({"id": i} in matching(e, summaries.get(e.experiment)) for e in REGISTER)
    ]
    assert unlisted == []


def test_real_data_rows_leave_diverged_runs_out(tmp_path):
    """compare_optimizers: a diverged seed is counted, not averaged into the numbers."""
    import numpy as np

    from attnbias.real.compare import compare_optimizers
    from attnbias.store import RunRecord, tidy

    def record(loss: float, diverged: bool) -> RunRecord:
        steps = np.arange(1, 11)
        table = tidy(
            steps,
            {
                "train_loss": np.full(10, loss),
                "test_accuracy": np.full(10, 0.5),
                "norm/layer": np.linspace(1.0, 1.1, 10),
                "moved/layer": np.linspace(0.0, 0.1, 10),
            },
        )
        return RunRecord("k", {}, table, {}, {"seconds": 1.0, "diverged": diverged})

    records = {
        ("d", "SGD", 0): record(1.0, False),
        ("d", "SGD", 1): record(float("nan"), True),
        ("d", "SNGD", 0): record(0.5, False),
        ("d", "SNGD", 1): record(0.5, False),
    }
    rows, _ = compare_optimizers(records, ["d"], ["SGD", "SNGD"], [0, 1], 10, tmp_path, "t", "t")
    sgd = next(r for r in rows if r["optimizer"] == "SGD")
    assert sgd["diverged"] == 1 and sgd["final_train_loss"][0] == 1.0
