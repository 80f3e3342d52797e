"""How long the MD paper's protocol for text-md would take on a device: the paper-size step and
scoring, timed, and the protocol's training time from them.

    python benchmarks/bench_text_md_paper.py [--device cuda] [--steps 364] [--json FILE]

`attnbias reproduce text-md --paper` trains the [paper] table of text-md.toml: the MD paper's
model (width 384, MLP 1,536, 3 blocks and heads, length 512), batch 100, each run until an epoch
reaches 99.5 % train accuracy or 1,000 epochs, scoring validation and test every `eval_every`
steps. This trains that model with the real data and `real.train.train`, as a text-md run
does, for `--steps` steps at the centre of each p's rate grid (seed 1, data order 1), and
prints per p: seconds a step (the whole `train` call on the wall clock, the device synchronised
before and after: every step's device work in), each finished epoch's train accuracy, one
scoring of validation and test (`ValidationChooser`, synchronised), and one run at the cap.
Then the protocol at the cap: per p a grid of `lr_search` rates and at most `lr_extensions`
more, the seeds but the search's own (its run at the chosen rate is the search's), and the data
orders, one run at a time at the slowest p's costs. The MiniLM reference, loading the data and
the analyses are not counted, and a run that reaches the target stops sooner.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from attnbias.experiment_registry import load_config
from attnbias.experiments.real_runs import ValidationChooser
from attnbias.experiments.text_md import MODEL_FIELDS, prepared_data
from attnbias.real.adapters import torch_device
from attnbias.real.train import seed_everything, train
from attnbias.real.transformer import TextTransformer


def whole_positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ≥ 1")
    return int(text)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--steps", type=whole_positive, default=364, help="steps per p (91 an epoch)"
    )
    parser.add_argument("--json", help="write the measurements here too")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    config = load_config("text-md", paper=True)
    device = torch_device(args.device)
    started = time.perf_counter()
    *_, run_data = prepared_data(config)
    print(f"data: {time.perf_counter() - started:.1f} s to load and tokenise at length "
          f"{config.max_len}; {len(run_data.splits[0])} training snippets")  # fmt: skip
    model_config = {k: getattr(config, k) for k in MODEL_FIELDS}
    per_epoch = len(run_data.splits[0]) // config.batch_size
    found = {"device": str(device), "torch": torch.__version__, "model": model_config,
             "batch_size": config.batch_size, "steps_per_epoch": per_epoch, "p": {}}  # fmt: skip
    if device.type == "cuda":
        found["gpu"] = torch.cuda.get_device_name(device)

    def synchronised_seconds(work, *args, **kwargs):
        """(seconds, result) of work(*args, **kwargs), the device's queue drained around it."""
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        result = work(*args, **kwargs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - started, result

    train_data, validation, test = run_data.splits
    scorings = config.steps // config.eval_every + 1
    for p, lr in zip(config.ps, config.lrs):
        seed_everything(1)
        model = TextTransformer(run_data.vocab_size, run_data.n_classes, **model_config)
        optimizer = {"name": "md", "p": p, "lr": lr, "normalize": False}
        seconds, history = synchronised_seconds(
            train, model, train_data, None, optimizer, steps=args.steps, progress=False,
            batch_size=config.batch_size, seed=1, eval_every=args.steps, device=device,
        )  # fmt: skip
        per_step = seconds / len(history.train_loss)
        chooser = ValidationChooser(validation, test, None, device=device)
        scoring, _ = synchronised_seconds(chooser, model)
        hours = (per_step * config.steps + scoring * scorings) / 3600
        epochs = [round(e["train_accuracy"], 4) for e in history.epochs]
        found["p"][f"{p:g}"] = {"lr": lr, "seconds_per_step": per_step, "scoring_seconds": scoring,
                                "run_hours_at_cap": hours, "epoch_accuracy": epochs}  # fmt: skip
        print(f"p = {p:g}, lr {lr:g}: {1e3 * per_step:.1f} ms a step, {scoring:.2f} s a "
              f"scoring; a run at the cap ({config.steps:,} steps, {scorings} scorings) "
              f"{hours:.2f} h; epoch train accuracy {epochs}")  # fmt: skip
    searched = len(config.lr_search) + config.lr_extensions
    runs_per_p = searched + len(config.seed_list) - 1 + config.order_seeds
    slowest = max(v["run_hours_at_cap"] for v in found["p"].values())
    hours = runs_per_p * len(config.ps) * slowest
    found.update(runs=runs_per_p * len(config.ps), hours_at_cap=hours)
    print(f"the protocol: at most {runs_per_p * len(config.ps)} runs (per p a grid of "
          f"{len(config.lr_search)} and at most {config.lr_extensions} more, "
          f"{len(config.seed_list) - 1} more seeds, {config.order_seeds} data orders; "
          f"{len(config.ps)} p): about {hours:.0f} h of training and scoring at the cap on this "
          f"device, one run at a time, at the slowest p's costs")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f, indent=1)


if __name__ == "__main__":
    main()
