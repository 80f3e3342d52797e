"""vision: a small ViT from scratch on MNIST and Fashion-MNIST with SGD, SNGD, SPS, Adam and
ℓ1.1-MD (NGD paper Figs. 6, 7: there SNGD trains *slower* than SGD and Adam is no faster)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..claims import Claim, not_applicable
from ..config import choices, positive_int
from ..data.fetch import DataMissingError
from ..data.vision import IMAGE_DATASETS, check_image_dataset
from ..real.compare import compare_optimizers, norm_growth_claim, train_compared
from ..real.runner import (
    OPTIMIZER_TABLES,
    REAL_COMMON,
    fmt,
    run_once,
    run_totals,
    start_run,
    subset,
)
from ..real.train import TensorData, optimizer_label
from ..real.vit import ViT

DESCRIPTION = (
    "small ViT on MNIST and Fashion-MNIST with SGD, SNGD, SPS, Adam, ℓ1.1-MD: train loss, "
    "test accuracy, per-layer norm growth"
)
MODEL_FIELDS = ("patch_size", "dim", "heads", "layers", "mlp_ratio")


SCHEMA = {
    **REAL_COMMON,
    "datasets": choices("image datasets", *IMAGE_DATASETS),
    "optimizers": OPTIMIZER_TABLES,
    "patch_size": positive_int("patch side in pixels"),
    "dim": positive_int("model width"),
    "heads": positive_int("attention heads per layer"),
    "layers": positive_int("transformer blocks"),
    "mlp_ratio": positive_int("MLP width / model width"),
}


def load_images(name: str, config: dict):
    splits = IMAGE_DATASETS[name]()
    data = []
    for split, size in zip(splits, (config["train_size"], config["test_size"])):
        order = subset(len(split), size)
        pixels = torch.from_numpy(split.images[order]).to(torch.get_default_dtype())
        data.append(TensorData({"pixels": pixels}, torch.from_numpy(split.labels[order])))
    return data[0], data[1], splits[0].images.shape[1], len(splits[0].classes)


def check_data(config: dict) -> None:
    """Raise DataMissingError (saying what to install) unless every dataset the config names
    is available; run() calls it before training anything, the CLI before any experiment."""
    for dataset in config["datasets"]:
        try:
            check_image_dataset(dataset)
        except DataMissingError as err:
            others = [d for d in config["datasets"] if d != dataset]
            raise DataMissingError(
                f"{err}; or run vision without it: `attnbias run my.toml` with "
                f'experiment = "vision" and datasets = {json.dumps(others or ["digits"])}'
            ) from err


def run(config: dict, out: Path) -> dict:
    check_data(config)
    config, out, store = start_run(config, out)
    model_config = {k: config[k] for k in MODEL_FIELDS}
    records = {}
    for dataset in config["datasets"]:
        train_data, test_data, image_size, n_classes = load_images(dataset, config)
        for optimizer in config["optimizers"]:
            for seed in config["seeds"]:
                run_config = {
                    "experiment": "vision",
                    "dataset": dataset,
                    "model": model_config,
                    "optimizer": dict(optimizer),
                    "seed": seed,
                    "train_size": len(train_data),
                    "test_size": len(test_data),
                    **{k: config[k] for k in ("steps", "batch_size", "eval_every")},
                }

                def train_fn(
                    checkpoints, run_config=run_config, data=(train_data, test_data),
                    size=image_size, n=n_classes,
                ):  # fmt: skip
                    label = optimizer_label(run_config["optimizer"])
                    return train_compared(
                        lambda: ViT(image_size=size, num_classes=n, **model_config),
                        data, run_config, checkpoints,
                        f"vision {run_config['dataset']} {label} seed={run_config['seed']}",
                    )  # fmt: skip

                key = (dataset, optimizer_label(optimizer), seed)
                records[key] = run_once(store, run_config, out, train_fn)

    labels = [optimizer_label(o) for o in config["optimizers"]]
    rows, figures = compare_optimizers(
        records, config["datasets"], labels, config["seeds"], config["steps"], out,
        "vision", "small ViT",
    )  # fmt: skip
    claims = vision_claims(rows, config["datasets"])
    table = [
        {
            "dataset": r["dataset"],
            "optimizer": r["optimizer"],
            "train loss (last 10%)": fmt(*r["final_train_loss"], digits=3),
            "test acc. (%)": fmt(*r["final_test_accuracy"], digits=1),
            "s/step": f"{r['seconds_per_step']:.3f}",
            "max norm growth": f"{max(r['norm_growth'].values()):.3f}",
        }
        for r in rows
    ]
    return {
        "claims": claims, "tables": {"vision": table}, "rows": rows, "figures": figures,
        **run_totals(records),
    }  # fmt: skip


VISION_CLAIMS = (
    "SNGD trains slower than SGD on the ViT: higher train loss ({dataset})",
    "Adam gains little over SGD: train loss not below half of SGD's ({dataset})",
)


def vision_claims(rows, datasets) -> list[Claim]:
    """The NGD paper's ViT findings, as measured by the train loss after the same steps."""
    claims = []
    for dataset in datasets:
        slower, little = (c.format(dataset=dataset) for c in VISION_CLAIMS)
        loss = {r["optimizer"]: r["final_train_loss"][0] for r in rows if r["dataset"] == dataset}
        if not {"SGD", "SNGD", "Adam"} <= set(loss):
            claims += [
                not_applicable(c, "needs runs of SGD, SNGD and Adam", f"vision/{slug}-{dataset}")
                for c, slug in ((slower, "sngd-slower"), (little, "adam-little"))
            ]
        else:
            evidence = {k: round(v, 4) for k, v in loss.items()}
            claims += [
                Claim(
                    slower, loss["SNGD"] > loss["SGD"], evidence, f"vision/sngd-slower-{dataset}"
                ),
                Claim(
                    little,
                    loss["Adam"] >= 0.5 * loss["SGD"],
                    evidence,
                    f"vision/adam-little-{dataset}",
                ),
            ]
        claims.append(norm_growth_claim(rows, dataset, f"vision/norm-growth-{dataset}"))  # Fig. 7
    return claims
