"""Where a text-md training step goes, before → after the exact savings (issue 17, point 7).

    python benchmarks/bench_text_md_step.py [--threads 1 2] [--rounds 5] [--steps 20]
        [--before REV] [--clock {wall,cpu}] [--ops] [--json FILE]

On the real data as text-md loads it (text_md.load_data: the 9,131 training snippets left
after carving the validation split, the 1,070 validation and 2,551 test snippets, MiniLM's
tokenizer, the vocabulary compacted to the training ids) and the default model of text-md.toml
(batch 64, max_len 48), it times:

- each phase of a training step (batch assembly, forward, backward, optimiser step) for plain
  ℓp-MD at p = 1.1, 2, 3, with the model as it is now ("after") and as it was at REV ("before":
  src/attnbias/real/transformer.py read from git), from the same initial weights and batches;
- an evaluation pass over the test split, with train.evaluate now and at REV;
- what a text-md run does once an epoch: real_runs.ValidationChooser scoring the validation
  and the test split;
- once: reading the corpus, carving the splits and tokenising them.

--clock cpu times with time.process_time (the CPU seconds of the one process) instead of the
wall clock: with one thread that is what a quiet core would take, so a loaded, shared machine
inflates it far less than the wall clock (it still pays for shared caches).

Each thread count runs in its own child process with OMP/MKL/OpenBLAS pinned before torch is
imported. The variants take turns round by round (in a fresh random order each round), so load
on a shared machine hits them alike; a figure is the median over a round's steps, best round.
--ops adds torch.profiler's operator table of one "after" step (p = 1.1).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
ROOT = Path(__file__).resolve().parent.parent
# The last commit before the exact savings: the "before" of every comparison.
BASELINE = "cf82aa322ed08bd882091a0fa36cf91649f0d711"
# Plain ℓp-MD at the rates the last full text-md run's search chose (text-md.toml).
RATES = {1.1: 0.16, 2.0: 0.4, 3.0: 0.04}
PHASES = ("batch", "forward", "backward", "step")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5, help="rounds (best one kept)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round")
    parser.add_argument("--before", default=BASELINE, help="git revision of the baseline")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: perf_counter; cpu: process_time (this process's CPU)",
    )
    parser.add_argument("--ops", action="store_true", help="print the operator table")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)  # one thread count
    args = parser.parse_args(argv)
    for name in ("rounds", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if any(t < 1 for t in args.threads):
        parser.error(f"--threads must be at least 1, got {args.threads}")
    return args


def module_at(revision: str, path: str, package: str) -> types.ModuleType:
    """The module at `path` of this repository as it was at `revision` (git show), its
    relative imports resolved in `package` as installed now."""
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{revision}:{path}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as err:
        detail = getattr(err, "stderr", "") or err
        raise SystemExit(f"--before {revision}: cannot read {path} from git ({detail})") from err
    module = types.ModuleType(f"{package}.before_{Path(path).stem}")
    module.__package__ = package
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(source, f"{revision[:10]}:{path}", "exec"), module.__dict__)
    return module


def child(args: argparse.Namespace) -> dict:
    import torch
    import torch.nn.functional as F

    from attnbias.experiment_registry import load_config
    from attnbias.experiments.real_runs import ValidationChooser
    from attnbias.experiments.text_md import (
        MODEL_FIELDS,
        compact_vocabulary,
        load_data,
        renumbered,
    )
    from attnbias.real import train as train_now
    from attnbias.real.minilm import load_tokenizer
    from attnbias.real.transformer import TextTransformer

    clock = time.perf_counter if args.clock == "wall" else time.process_time

    torch.set_num_threads(args.child)
    torch.set_num_interop_threads(args.child)
    before = {
        "model": module_at(args.before, "src/attnbias/real/transformer.py", "attnbias.real"),
        "train": module_at(args.before, "src/attnbias/real/train.py", "attnbias.real"),
    }
    config = load_config("text-md")
    shape = {k: getattr(config, k) for k in MODEL_FIELDS}

    # once per experiment: the corpus, its splits and their tokens
    tokenizer = load_tokenizer()
    start = clock()
    _, _, encoded, _ = load_data(config, tokenizer)
    load_s = clock() - start
    table = compact_vocabulary(
        encoded["train"].inputs["input_ids"], tokenizer.vocab_size, tokenizer.unk_token_id
    )
    train_data, validation_data, test_data = (
        renumbered(encoded[n], table) for n in ("train", "validation", "test")
    )
    vocab = int(table.max()) + 1
    real_tokens = float(train_data.inputs["attention_mask"].sum(1).double().mean())

    torch.manual_seed(0)
    models = {"before": before["model"].TextTransformer(vocab, 2, **shape)}
    models["after"] = TextTransformer(vocab, 2, **shape)
    models["after"].load_state_dict(models["before"].state_dict())  # the same weights

    def step_times(model, optimizer, step) -> dict:
        t0 = clock()
        inputs, labels = train_data.batch(
            train_now.batch_indices(len(train_data), config.batch_size, 0, step)
        )
        t1 = clock()
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(**inputs).logits, labels)
        t2 = clock()
        loss.backward()
        t3 = clock()
        optimizer.step()
        loss.item()
        t4 = clock()
        return dict(zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)))

    runs = {}  # (variant, p) → (model, optimizer, next step)
    for variant, model in models.items():
        for p, lr in RATES.items():
            m = copy.deepcopy(model)
            m.train()
            opt = train_now.make_optimizer(m.parameters(), {"name": "md", "p": p, "lr": lr})
            for step in range(3):  # warm-up: allocations, the dual iterates
                step_times(m, opt, step)
            runs[(variant, p)] = [m, opt, 3]
    chooser = ValidationChooser(validation_data, test_data)
    evaluators = {
        "before": lambda: before["train"].evaluate(models["before"], test_data, 256),
        "after": lambda: train_now.evaluate(models["after"], test_data, 256),
        "chooser": lambda: chooser(models["after"]),  # a text-md run's evaluation, per epoch
    }
    # the dropout masks of one step (after the embeddings, and twice per block), drawn for the
    # whole padded batch as the model draws them: a floor of every exact variant
    drop = torch.nn.Dropout(config.dropout)
    width = train_data.batch(slice(0, config.batch_size))[0]["input_ids"].shape[1]
    masks = 1 + 2 * config.layers

    def draw_masks():
        for _ in range(masks):
            drop(torch.ones(config.batch_size * width, config.dim))

    timings = {key: [] for key in runs}
    eval_timings = {v: [] for v in evaluators}
    mask_timings = []
    scores = {}
    for _ in range(args.rounds):
        order = list(runs) + [("eval", v) for v in evaluators] + [("masks",)]
        random.shuffle(order)
        for key in order:
            if key[0] == "masks":
                mask_timings.append(median_time(draw_masks, args.steps, clock))
                continue
            if key[0] == "eval":
                start = clock()
                scores[key[1]] = evaluators[key[1]]()
                eval_timings[key[1]].append(clock() - start)
                continue
            model, optimizer, step = runs[key]
            rows = [step_times(model, optimizer, step + i) for i in range(args.steps)]
            runs[key][2] += args.steps
            timings[key].append({k: statistics.median(r[k] for r in rows) for k in PHASES})

    steps = {}
    for (variant, p), rounds in timings.items():
        best = min(rounds, key=lambda r: sum(r.values()))
        steps.setdefault(variant, {})[f"{p:g}"] = {k: 1e3 * v for k, v in best.items()}
    result = {
        "threads": args.child,
        "clock": args.clock,
        "vocabulary": vocab,
        "train_snippets": len(train_data),
        "validation_snippets": len(validation_data),
        "test_snippets": len(test_data),
        "steps_per_epoch": len(train_data) // config.batch_size,
        "mean_real_tokens": real_tokens,
        "load_data_s": load_s,
        "step_ms": steps,
        "eval_ms": {v: 1e3 * min(t) for v, t in eval_timings.items()},
        "dropout_masks_ms": 1e3 * min(mask_timings),
        "dropout_masks": f"{masks} × {config.batch_size}·{width}·{config.dim}",
        "eval_scores": scores,
    }
    if args.ops:
        result["ops"] = operator_table(runs[("after", 1.1)], step_times)
    return result


def median_time(fn, repeats: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def operator_table(run, step_times) -> str:
    from torch.profiler import ProfilerActivity, profile

    model, optimizer, step = run
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(5):
            step_times(model, optimizer, step + i)
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25)


def report(results: list[dict]) -> None:
    first = results[0]
    print(
        f"text-md step: {first['train_snippets']:,} training snippets "
        f"(mean {first['mean_real_tokens']:.1f} real tokens), compacted vocabulary "
        f"{first['vocabulary']:,}; reading, splitting and tokenising the corpus "
        f"{first['load_data_s']:.2f} s (once per experiment); clock: {first['clock']}"
    )
    for r in results:
        print(f"\nthreads {r['threads']}: ms per step (median of a round, best round)")
        print(f"{'p':>4} {'variant':<7}" + "".join(f"{k:>10}" for k in PHASES) + f"{'total':>10}")
        for p in r["step_ms"]["after"]:
            for variant in ("before", "after"):
                row = r["step_ms"][variant][p]
                cells = "".join(f"{row[k]:>10.2f}" for k in PHASES)
                print(f"{p:>4} {variant:<7}{cells}{sum(row.values()):>10.2f}")
            ratio = sum(r["step_ms"]["before"][p].values()) / sum(r["step_ms"]["after"][p].values())
            print(f"{p:>4} before/after: {ratio:.2f}×")
        print(
            f"of a step's forward: drawing its dropout masks ({r['dropout_masks']} draws) "
            f"{r['dropout_masks_ms']:.2f} ms, in every variant"
        )
        e = r["eval_ms"]
        print(
            f"evaluation of the {r['test_snippets']:,} test snippets: before {e['before']:.0f} ms, "
            f"after {e['after']:.0f} ms ({e['before'] / e['after']:.2f}×); scores before "
            f"{r['eval_scores']['before']}, after {r['eval_scores']['after']}"
        )
        per_epoch = r["steps_per_epoch"]
        for p, row in r["step_ms"]["after"].items():
            train_s = per_epoch * sum(row.values()) / 1e3
            print(
                f"p = {p}: an epoch ({per_epoch} steps) {train_s:.2f} s of training + "
                f"{e['chooser'] / 1e3:.2f} s scoring validation ({r['validation_snippets']:,}) "
                f"and test ({r['test_snippets']:,}) = {train_s + e['chooser'] / 1e3:.2f} s"
            )
        if "ops" in r:
            print(r["ops"])


def main() -> None:
    args = parse_args()
    if args.child is not None:
        print(json.dumps(child(args)))
        return
    results = []
    for threads in args.threads:
        env = dict(os.environ, **dict.fromkeys(THREAD_VARIABLES, str(threads)))
        argv = [sys.executable, __file__, "--child", str(threads), "--rounds", str(args.rounds),
                "--steps", str(args.steps), "--before", args.before,
                "--clock", args.clock]  # fmt: skip
        if args.ops:
            argv.append("--ops")
        out = subprocess.run(argv, env=env, capture_output=True, text=True)
        if out.returncode:
            sys.exit(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))


if __name__ == "__main__":
    main()
