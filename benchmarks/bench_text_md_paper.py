"""How long the MD paper's protocol for text-md would take on a device: the paper-size step,
timed, and the protocol's bound from it.

    python benchmarks/bench_text_md_paper.py [--device cuda] [--steps 364] [--json FILE]

`attnbias reproduce text-md --paper` trains the [paper] table of text-md.toml: the MD paper's
model (width 384, MLP 1,536, 3 blocks and heads, length 512), batch 100, each run until an epoch
reaches 99.5 % train accuracy or 1,000 epochs. This trains that model with the real data and
`real.train.train`, as a text-md run does, for `--steps` steps at the centre of each p's rate grid
(seed 1, data order 1), and prints per p: seconds a step (evaluations excluded), each finished
epoch's train accuracy, and the device time of one run at the cap. Then the protocol's runs
(rate search, seeds and data orders, all counted from the config) at the cap: the upper bound
of the protocol's device time on this device, one run at a time.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from attnbias.experiment_registry import load_config
from attnbias.experiments.text_md import MODEL_FIELDS, prepared_data
from attnbias.real.adapters import torch_device
from attnbias.real.train import seed_everything, train
from attnbias.real.transformer import TextTransformer


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=364, help="steps per p (91 an epoch)")
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
    for p, lr in zip(config.ps, config.lrs):
        seed_everything(1)
        model = TextTransformer(run_data.vocab_size, run_data.n_classes, **model_config)
        history = train(
            model, run_data.splits[0], None, {"name": "md", "p": p, "lr": lr, "normalize": False},
            steps=args.steps, batch_size=config.batch_size, seed=1, eval_every=args.steps,
            progress=False, device=device,
        )  # fmt: skip
        per_step = history.seconds / len(history.train_loss)
        epochs = [round(e["train_accuracy"], 4) for e in history.epochs]
        found["p"][f"{p:g}"] = {"lr": lr, "seconds_per_step": per_step, "epoch_accuracy": epochs}
        print(f"p = {p:g}, lr {lr:g}: {1e3 * per_step:.1f} ms a step; a run at the cap "
              f"({config.steps:,} steps) {per_step * config.steps / 3600:.2f} h; epoch train "
              f"accuracy {epochs}")  # fmt: skip
    runs_per_p = len(config.lr_search) + len(config.seed_list) + config.order_seeds
    slowest = max(v["seconds_per_step"] for v in found["p"].values())
    bound = runs_per_p * len(config.ps) * config.steps * slowest / 3600
    found.update(runs=runs_per_p * len(config.ps), hours_at_cap=bound)
    print(f"the protocol: {runs_per_p * len(config.ps)} runs (grid of {len(config.lr_search)}, "
          f"{len(config.seed_list)} seeds, {config.order_seeds} data orders, for each of "
          f"{len(config.ps)} p), at most {bound:.0f} h on this device one run at a time "
          f"(at the slowest p's step; a run stops sooner where it reaches the target)")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f, indent=1)


if __name__ == "__main__":
    main()
