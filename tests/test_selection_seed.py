"""Issue 29 (referee, point 12): the real-data experiments choose each arm's learning rate on
the runs of the first seed; the claims compare the other seeds only (selection and evaluation
on different seeds), and the register's protocol text says so with the n that follows."""

from __future__ import annotations

import numpy as np
import pytest

import claim_cases_real
from attnbias.experiment_registry import load_config
from attnbias.experiments import compare, text_finetune, text_md
from attnbias.judging import register


def rows_searched_on(seed):
    rows = claim_cases_real.loss_rows("sst2", 0.05, SGD=1.0, SNGD=0.2, SPS=0.21, Adam=0.2)
    for row in rows:
        row["seeds"] = list(range(len(row["final_train_loss_by_seed"])))
        row["rate_search"] = {"tried": [0.1, 0.3], "chosen": 0.1, "interior": True, "seed": seed}
    return rows


def test_the_claims_leave_out_the_seed_the_rates_were_chosen_on():
    rows = rows_searched_on(0)
    arms = compare.arms(rows, "sst2")
    for row in rows:
        losses = np.asarray(row["final_train_loss_by_seed"])
        assert np.array_equal(arms[row["optimizer"]].of("final_train_loss"), losses[1:])
        growth = [g["layer0"] for g in row["norm_growth_by_seed"][1:]]
        assert np.allclose(arms[row["optimizer"]].of("log_growth/layer0"), np.log(growth))
    (beat, *_) = text_finetune.finetune_claims(rows, ["sst2"])
    (sst2,) = beat.parts  # one data set: one part, the comparisons its own parts
    assert sst2.parts[0].effect.n == len(rows[0]["seeds"]) - 1


def test_rows_without_a_search_keep_every_seed():
    rows = rows_searched_on(None)
    arms = compare.arms(rows, "sst2")
    assert arms["SGD"].of("final_train_loss").size == len(rows[0]["seeds"])


def test_text_md_compares_the_seeds_it_did_not_search_on():
    records = {("seeds", 1.1, s): s for s in range(3)} | {("order", 1.1, 0): "o"}
    assert text_md.without_seed(records, 0) == {
        ("seeds", 1.1, 1): 1,
        ("seeds", 1.1, 2): 2,
        ("order", 1.1, 0): "o",
    }


@pytest.mark.parametrize("name", ["text-md", "text-finetune", "vision"])
def test_the_selection_seed_is_the_searched_one_and_the_protocol_says_n(name):
    config = load_config(name)
    assert config.selection_seed == config.seed_list[0]
    assert config.evaluation_seeds == config.seed_list[1:]
    said = f"n = {len(config.evaluation_seeds)} paired seeds of {len(config.seed_list)}"
    entries = [e for e in register.REGISTER if e.experiment == name]
    assert entries and all(said in e.differences for e in entries), said
