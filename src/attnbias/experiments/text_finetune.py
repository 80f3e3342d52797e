"""text-finetune: the pretrained MiniLM fine-tuned with SGD, SNGD, SPS, Adam and ℓ1.1-MD on
binary and 3-class sentiment (NGD paper's BERT experiments, Figs. 1 and 4).

Per run: train loss every step, test accuracy and per-layer parameter norms (and distance from
the pretrained weights) every `eval_every` steps.
"""

from __future__ import annotations

from pathlib import Path

from ..claims import Claim, identified, not_applicable
from ..config import choices, fraction, positive_int
from ..data.text import TEXT_DATASETS
from ..real.compare import compare_optimizers, loss_claims, norm_growth_claim, train_compared
from ..real.minilm import MiniLMClassifier, load_tokenizer
from ..real.runner import (
    OPTIMIZER_TABLES,
    REAL_COMMON,
    fmt,
    load_text,
    run_once,
    run_totals,
    start_run,
)
from ..real.train import optimizer_label

DESCRIPTION = (
    "pretrained MiniLM fine-tuned on binary and 3-class sentiment with SGD, SNGD, SPS, Adam, "
    "ℓ1.1-MD: train loss against steps, test accuracy, per-layer norm growth"
)


SCHEMA = {
    **REAL_COMMON,
    "datasets": choices("sentiment datasets", *TEXT_DATASETS),
    "optimizers": OPTIMIZER_TABLES,
    "max_len": positive_int("tokens per text, incl. [CLS]/[SEP]"),
    "dropout": fraction("dropout of the pretrained model and the head"),
}


def run(config: dict, out: Path) -> dict:
    config, out, store = start_run(config, out)
    tokenizer = load_tokenizer()
    records = {}
    for dataset in config["datasets"]:
        train_data, test_data, classes = load_text(dataset, tokenizer, config)
        n_classes = len(classes)
        for optimizer in config["optimizers"]:
            for seed in config["seeds"]:
                run_config = {
                    "experiment": "text-finetune",
                    "model": "all-MiniLM-L6-v2",
                    "dataset": dataset,
                    "optimizer": dict(optimizer),
                    "seed": seed,
                    "train_size": len(train_data),
                    "test_size": len(test_data),
                    **{k: config[k] for k in ("steps", "batch_size", "eval_every", "max_len")},
                    "dropout": config["dropout"],
                }

                def train_fn(
                    checkpoints, run_config=run_config, data=(train_data, test_data),
                    n_classes=n_classes,
                ):  # fmt: skip
                    label = optimizer_label(run_config["optimizer"])
                    return train_compared(
                        lambda: MiniLMClassifier(n_classes, dropout=config["dropout"]),
                        data, run_config, checkpoints, f"finetune {run_config['dataset']} {label}",
                        checkpoint_every=config["eval_every"],  # runs are shorter than an epoch
                        eval_batch_size=64,
                    )  # fmt: skip

                key = (dataset, optimizer_label(optimizer), seed)
                records[key] = run_once(store, run_config, out, train_fn)
    return summarize(config, records, out)


def summarize(config, records, out: Path) -> dict:
    labels = [optimizer_label(o) for o in config["optimizers"]]
    rows, figures = compare_optimizers(
        records, config["datasets"], labels, config["seeds"], config["steps"], out,
        "finetune", "MiniLM fine-tuning",
    )  # fmt: skip
    claims = finetune_claims(rows, config["datasets"])
    table = table_rows(rows, len(config["seeds"]))
    return {"claims": claims, "tables": {"text_finetune": table}, "rows": rows,
            "figures": figures, **run_totals(records)}  # fmt: skip


def finetune_claims(rows: list[dict], datasets) -> list[Claim]:
    """The NGD paper's fine-tuning findings, from the table rows (final train loss, per-layer
    norm growth) of each dataset."""
    claims = loss_claims(rows, datasets, ("SNGD", "SPS"), "SGD", "")
    identified("text-finetune", claims, (f"sngd-sps-beat-sgd-{d}" for d in datasets))
    for dataset in datasets:
        loss = {r["optimizer"]: r["final_train_loss"][0] for r in rows if r["dataset"] == dataset}
        as_fast = (
            "SNGD or SPS train about as fast as Adam: within 0.05 nats of its final train loss "
            f"({dataset})"
        )
        if {"SNGD", "SPS", "Adam"} <= set(loss):
            claims.append(
                Claim(
                    as_fast,
                    min(loss["SNGD"], loss["SPS"]) <= loss["Adam"] + 0.05,
                    {k: round(v, 4) for k, v in loss.items()},
                    f"text-finetune/as-fast-as-adam-{dataset}",
                )
            )
        else:
            why = "needs runs of SNGD, SPS and Adam"
            claims.append(not_applicable(as_fast, why, f"text-finetune/as-fast-as-adam-{dataset}"))
        claims.append(norm_growth_claim(rows, dataset, f"text-finetune/norm-growth-{dataset}"))
    return claims


def table_rows(rows, n_seeds: int) -> list[dict]:
    def show(mean_std, digits):  # one seed has no spread to show
        return fmt(*mean_std, digits=digits) if n_seeds > 1 else f"{mean_std[0]:.{digits}f}"

    return [
        {
            "dataset": r["dataset"],
            "optimizer": r["optimizer"],
            "train loss (last 10%)": show(r["final_train_loss"], 3),
            "test acc. (%)": show(r["final_test_accuracy"], 1),
            "s/step": f"{r['seconds_per_step']:.2f}",
            "max ‖θ_T‖/‖θ_0‖ − 1": f"{max(r['norm_growth'].values()) - 1:.3e}",
            "min ‖θ_T‖/‖θ_0‖ − 1": f"{min(r['norm_growth'].values()) - 1:.3e}",
        }
        for r in rows
    ]
