"""text-finetune: the pretrained MiniLM fine-tuned with SGD, SNGD, SPS, Adam and ℓ1.1-MD on
binary and 3-class sentiment (NGD paper's BERT experiments, Figs. 1 and 4).

Per run: train loss every step, test accuracy and per-layer parameter norms (and distance from
the pretrained weights) every `eval_every` steps.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..experiment_configs.text_finetune import Config
from ..judging.claims import Claim, identified, not_applicable
from ..judging.verdicts import real as rules
from ..judging.verdicts.real import ABOUT_EQUAL
from ..real.adapters import load_text
from ..real.minilm import MiniLMClassifier, load_tokenizer
from .compare import (
    arms,
    ci_text,
    compare_optimizers,
    grid_text,
    norm_growth_claim,
    on_every_dataset,
)
from .real_runs import Loaded, search_totals, train_grid, use_threads

DESCRIPTION = (
    "pretrained MiniLM fine-tuned on binary and 3-class sentiment with SGD, SNGD, SPS, Adam, "
    "ℓ1.1-MD: train loss against steps, test accuracy, per-layer norm growth"
)
# Full scale in one process on 2 CPU cores: the 4,468 s docs/REAL_DATA.md measured for the 30
# runs, plus an estimate for the rate search (30-50 runs of 40 steps); `attnbias reproduce`
# states it first.
FULL_SCALE_MINUTES = 95
MODEL = "all-MiniLM-L6-v2"


def text_data(dataset: str, tokenizer, train_size: int, test_size: int, max_len: int,
              dropout: float) -> Loaded:  # fmt: skip
    """The data set's train and test texts, encoded, and its MiniLM classifier."""
    train, test, classes = load_text(dataset, tokenizer, train_size, test_size, max_len)
    model = functools.partial(MiniLMClassifier, len(classes), dropout=dropout)
    return Loaded(train, test, model)


def run(config: Config, out: Path) -> dict:
    use_threads(config)

    tokenizer = load_tokenizer()

    def load(dataset: str) -> Loaded:
        sizes = (config.train_size, config.test_size, config.max_len, config.dropout)
        return text_data(dataset, tokenizer, *sizes)

    run_fields = {"model": MODEL, "max_len": config.max_len, "dropout": config.dropout}
    records, searches = train_grid(
        config, out, load, run_fields, "finetune",
        checkpoint_every=config.eval_every,  # runs are shorter than an epoch
        eval_batch_size=64,
    )  # fmt: skip
    return finetune_summary(config, records, searches, out)


def finetune_summary(config: Config, records, searches, out: Path) -> dict:
    labels = [o.name for o in config.optimizers]
    rows, figures = compare_optimizers(
        records, config.datasets, labels, config.seed_list, config.steps, out,
        "finetune", "MiniLM fine-tuning", searches,
    )  # fmt: skip
    claims = finetune_claims(rows, config.datasets)
    return {"claims": claims, "tables": {"text_finetune": table_rows(rows)}, "rows": rows,
            "figures": figures, **search_totals(records, searches)}  # fmt: skip


FASTER_SOURCE = "the NGD paper, Figs. 1 and 4: SNGD and SPS train faster than SGD (a ratio > 1)"
AS_FAST_SOURCE = (
    f"ours: about as fast as Adam (our words for Figs. 1 and 4) read as a final train loss "
    f"within a factor {ABOUT_EQUAL:g} "
    "of Adam's, either way"
)


def finetune_claims(rows: list[dict], datasets) -> list[Claim]:
    """The NGD paper's fine-tuning findings, one claim per statement with a part per dataset
    (`compare.on_every_dataset`), from the rows' per-seed final train losses and norm growths
    (verdicts/real.py)."""
    beat, fast, grow = [], [], []
    for dataset in datasets:
        found = arms(rows, dataset)
        faster = (
            "SNGD and SPS both train faster than SGD: a lower final train loss after the "
            "same steps ({}; " + chosen_rates(rows, dataset, ("SGD", "SNGD", "SPS")) + ")"
        )
        equal = (f"SNGD and SPS both train about as fast as Adam: final train loss within a "
                 f"factor {ABOUT_EQUAL:g} of Adam's after the same steps, either way ({{}}; "
                 + chosen_rates(rows, dataset, ("SNGD", "SPS", "Adam")) + ")")  # fmt: skip
        if {"SGD", "SNGD", "SPS"} <= set(found):
            beat.append(rules.lower_loss(found, ("SNGD", "SPS"), "SGD", FASTER_SOURCE,
                                         faster.format(dataset)))  # fmt: skip
        else:
            beat.append(not_applicable(faster.format(dataset), "needs runs of SGD, SNGD and SPS"))
        if {"Adam", "SNGD", "SPS"} <= set(found):
            fast.append(rules.about_equal(found, ("SNGD", "SPS"), "Adam", ABOUT_EQUAL,
                                          AS_FAST_SOURCE, equal.format(dataset)))  # fmt: skip
        else:
            fast.append(not_applicable(equal.format(dataset), "needs runs of SNGD, SPS and Adam"))
        grow.append(norm_growth_claim(rows, dataset))
    claims = [
        on_every_dataset("SNGD and SPS both train faster than SGD", beat),
        on_every_dataset(f"SNGD and SPS both train about as fast as Adam (within a factor "
                         f"{ABOUT_EQUAL:g})", fast),
        on_every_dataset("every layer's parameter norm grows during training, for every "
                         "optimiser", grow),
    ]  # fmt: skip
    return identified("text-finetune", claims, ["sngd-sps-beat-sgd", "as-fast-as-adam",
                                                 "norm-growth"])  # fmt: skip


def chosen_rates(rows, dataset: str, names) -> str:
    """Each named optimiser's rates tried on `dataset`, the chosen one in bold, and whether a
    chosen rate sits at its grid's edge (the claim is then inconclusive: a rate beyond it
    might do better)."""
    mine = [r for r in rows if r["dataset"] == dataset and r["optimizer"] in names]
    edge = [r["optimizer"] for r in mine if not r.get("rate_search", {}).get("interior", True)]
    tried = "; ".join(f"{r['optimizer']} {grid_text(r)}" for r in mine)
    where = f"at its grid's edge: {', '.join(edge)}" if edge else "none at its grid's edge"
    return f"rates tried, chosen in bold: {tried}; {where}"


def table_rows(rows) -> list[dict]:
    return [
        {
            "dataset": r["dataset"],
            "optimizer": r["optimizer"],
            "rates tried (chosen)": grid_text(r),
            "train loss, last 10 % [95 % CI]": ci_text(r["final_train_loss_by_seed"]),
            "test acc. (%) [95 % CI]": ci_text(r["final_test_accuracy_by_seed"], 1),
            "s/step": f"{r['seconds_per_step']:.2f}",
            "max ‖θ_T‖/‖θ_0‖ − 1": f"{max(r['norm_growth'].values()) - 1:.3e}",
            "min ‖θ_T‖/‖θ_0‖ − 1": f"{min(r['norm_growth'].values()) - 1:.3e}",
        }
        for r in rows
    ]
