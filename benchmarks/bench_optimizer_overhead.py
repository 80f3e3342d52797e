"""Time per optimiser step on MiniLM fine-tuning: SNGD, SPS and ℓ1.1-MD against SGD and Adam.

One fixed batch, one process, each optimiser on its own copy of the model; the optimisers take
turns round by round (in a fresh random order each round) so background load hits them alike.
For each we time optimizer.step() alone and the whole iteration (zero_grad + forward + backward
+ step), and report medians and their ratios to SGD. Goal (p-GD's "virtually no overhead"):
a full iteration within 1.1× SGD's.

    python benchmarks/bench_optimizer_overhead.py [--rounds 10] [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import time

import torch
import torch.nn.functional as F

from attnbias.data.text import rotten_tomatoes
from attnbias.real.minilm import MiniLMClassifier, encode, load_tokenizer
from attnbias.real.train import make_optimizer, optimizer_label

OPTIMIZERS = [
    {"name": "sgd", "lr": 0.1},
    {"name": "adam", "lr": 1e-4},
    {"name": "sngd", "lr": 0.1},
    {"name": "sps", "lr_max": 0.1, "c": 0.5},
    {"name": "md", "p": 1.1, "lr": 0.05},
    {"name": "md", "p": 1.1, "lr": 0.05, "normalize": "per_tensor"},
]


def label(config) -> str:
    return optimizer_label(config) + (" (normalized)" if config.get("normalize") else "")


def iteration(model, optimizer, batch, labels) -> tuple[float, float]:
    """(seconds for the whole iteration, seconds for optimizer.step alone)."""
    start = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(**batch).logits, labels)
    loss.backward()
    before_step = time.perf_counter()
    optimizer.step(lambda: loss)
    end = time.perf_counter()
    return end - start, end - before_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    tokenizer = load_tokenizer()
    train, _ = rotten_tomatoes()
    data = encode(tokenizer, train.texts[: args.batch_size], train.labels[: args.batch_size],
                  args.max_len)  # fmt: skip
    batch, labels = data.batch(slice(None))
    base = MiniLMClassifier(num_classes=2)
    # each optimiser trains its own copy, so its state stays consistent with its weights
    optimizers = []
    for c in OPTIMIZERS:
        model = copy.deepcopy(base)
        optimizers.append((label(c), model, make_optimizer(model.parameters(), c)))

    for _, model, optimizer in optimizers:  # warm-up: allocations, optimiser state
        iteration(model, optimizer, batch, labels)
    times = {name: ([], []) for name, _, _ in optimizers}
    order = list(optimizers)
    for _ in range(args.rounds):
        random.shuffle(order)
        for name, model, optimizer in order:
            full, step = iteration(model, optimizer, batch, labels)
            times[name][0].append(full)
            times[name][1].append(step)

    median = {n: (statistics.median(f), statistics.median(s)) for n, (f, s) in times.items()}
    sgd_full, sgd_step = median["SGD"]
    print(f"MiniLM (22.7M parameters), batch {args.batch_size}×{batch['input_ids'].shape[1]} "
          f"tokens, {args.threads} thread(s), median of {args.rounds} rounds")  # fmt: skip
    print(f"{'optimiser':<22}{'step ms':>9}{'iter ms':>9}{'step/SGD':>10}{'iter/SGD':>10}")
    results = []
    for name, (full, step) in median.items():
        row = {"optimizer": name, "step_ms": 1e3 * step, "iteration_ms": 1e3 * full,
               "step_vs_sgd": step / sgd_step, "iteration_vs_sgd": full / sgd_full}  # fmt: skip
        results.append(row)
        print(f"{name:<22}{row['step_ms']:>9.1f}{row['iteration_ms']:>9.1f}"
              f"{row['step_vs_sgd']:>9.2f}×{row['iteration_vs_sgd']:>9.2f}×")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
