"""text-md: ℓp mirror descent on a transformer trained from scratch on sentiment (MD paper's
IMDb experiment on the offline Rotten Tomatoes snippets).

For each p and seed: test accuracy along training, the share of the final layer's [CLS]
attention on the sentiment word of the probe sentences (real/probe.py), and the K, Q, V weights
(histograms, Hoyer sparsity).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..claims import Claim, not_applicable
from ..config import Field, check_paired, choice, numbers, positive_int
from ..data.text import TEXT_DATASETS
from ..figures import save_figure
from ..real.attention import attention_maps, token_mass, uniform_mass
from ..real.minilm import load_tokenizer
from ..real.probe import build_probe
from ..real.runner import (
    REAL_COMMON,
    fmt,
    history_table,
    load_text,
    mean_std,
    run_once,
    run_totals,
    series,
    start_run,
)
from ..real.train import seed_everything, train
from ..real.transformer import TextTransformer

DESCRIPTION = (
    "ℓp-MD (p = 1.1, 2, 3) on a small transformer from scratch on Rotten Tomatoes sentiment: "
    "test accuracy, [CLS] attention on the sentiment word, K/Q/V weight sparsity"
)
# MD paper, IMDb, 3 blocks/heads: max test accuracy (%) and key-word attention score.
PAPER_ACCURACY = {1.1: (83.47, 0.09), 2.0: (81.66, 0.09), 3.0: (82.57, 0.10)}
PAPER_KEYWORD_ATTENTION = {1.1: 0.44, 2.0: 0.31}

SCHEMA = {
    **REAL_COMMON,
    "dataset": choice("sentiment dataset", *TEXT_DATASETS),
    "data_path": Field(str, "local copy of the dataset file ('': cache / fetch)"),
    "ps": numbers("the p of each ℓp mirror descent compared", float, 1, strict=True),
    "lrs": numbers("one learning rate per p", float, 0, strict=True),
    "normalize": choice("how mirror-descent steps are normalized", "per_tensor", "global", "none"),
    "max_len": positive_int("tokens per text, incl. [CLS]/[SEP]"),
    "dim": positive_int("model width"),
    "heads": positive_int("attention heads per layer"),
    "layers": positive_int("transformer blocks"),
}


def compact_vocabulary(train_ids: torch.Tensor, vocab_size: int, unk_id: int) -> torch.Tensor:
    """A table renumbering token ids to those seen in training ([UNK] for the rest), so the
    embedding has no never-trained rows: new_ids = table[ids]."""
    seen = torch.unique(torch.cat([train_ids.flatten(), torch.tensor([unk_id])]))
    table = torch.full((vocab_size,), -1, dtype=torch.long)
    table[seen] = torch.arange(len(seen))
    return torch.where(table >= 0, table, table[unk_id])


def hoyer_sparsity(w: np.ndarray) -> float:
    """(√n − ‖w‖₁/‖w‖₂)/(√n − 1): 0 for equal magnitudes, 1 for a single nonzero; scale-free."""
    w = np.abs(w.ravel())
    n = w.size
    return float((np.sqrt(n) - w.sum() / np.sqrt((w**2).sum())) / (np.sqrt(n) - 1))


def small_share(w: np.ndarray, relative: float = 0.01) -> float:
    """Share of entries below `relative` × the root-mean-square entry: near-zero weights."""
    w = np.abs(w.ravel())
    return float((w < relative * np.sqrt((w**2).mean())).mean())


def kqv_weights(model: TextTransformer) -> dict[str, np.ndarray]:
    blocks = model.encoder.blocks
    return {
        name: torch.cat(
            [getattr(b.attention, attr).weight.detach().flatten() for b in blocks]
        ).numpy()
        for name, attr in (("K", "key"), ("Q", "query"), ("V", "value"))
    }


def polarity_labels(classes: tuple[str, ...]) -> tuple[int, int]:
    """(positive, negative) class indices for the probe: fresh/rotten or positive/negative."""
    positive = "fresh" if "fresh" in classes else "positive"
    negative = "rotten" if "rotten" in classes else "negative"
    return classes.index(positive), classes.index(negative)


@torch.no_grad()
def probe_accuracy(model, probe) -> float:
    model.eval()
    predicted = model(**probe.inputs).logits.argmax(-1)
    return float((predicted == probe.labels).double().mean())


def run(config: dict, out: Path) -> dict:
    check_paired(config, "lrs", "ps")
    config, out, store = start_run(config, out)
    tokenizer = load_tokenizer()
    train_data, test_data, classes = load_text(
        config["dataset"], tokenizer, config, config["data_path"] or None
    )
    probe = build_probe(tokenizer, *polarity_labels(classes))
    table = compact_vocabulary(
        train_data.inputs["input_ids"], tokenizer.vocab_size, tokenizer.unk_token_id
    )
    for ids_owner in (train_data.inputs, test_data.inputs):
        ids_owner["input_ids"] = table[ids_owner["input_ids"]]
    probe.input_ids = table[probe.input_ids]
    vocab_size = int(table.max()) + 1
    model_config = {k: config[k] for k in ("dim", "heads", "layers", "max_len")}
    normalize = False if config["normalize"] == "none" else config["normalize"]

    records = {}
    for p, lr in zip(map(float, config["ps"]), map(float, config["lrs"])):
        for seed in config["seeds"]:
            run_config = {
                "experiment": "text-md",
                "dataset": config["dataset"],
                "train_size": len(train_data),
                "test_size": len(test_data),
                "model": model_config,
                "optimizer": {"name": "md", "p": p, "lr": lr, "normalize": normalize},
                "p": p,
                "seed": seed,
                **{k: config[k] for k in ("steps", "batch_size", "eval_every")},
            }

            def train_fn(checkpoints, p=p, seed=seed, run_config=run_config):
                seed_everything(seed)
                model = TextTransformer(vocab_size, len(classes), **model_config)
                history = train(
                    model, train_data, test_data, run_config["optimizer"],
                    steps=config["steps"], batch_size=config["batch_size"], seed=seed,
                    eval_every=config["eval_every"], checkpoint_dir=checkpoints,
                    desc=f"text-md p={p:g} seed={seed}",
                )  # fmt: skip
                layers = attention_maps(model, probe.inputs)
                selection = token_mass(layers, probe.word_mask).numpy()  # (layers, heads)
                weights = kqv_weights(model)
                info = {
                    "seconds": history.seconds,
                    "diverged": history.diverged,
                    "keyword_attention": float(selection[-1].mean()),
                    "probe_accuracy": probe_accuracy(model, probe),
                    **{f"hoyer_{k}": hoyer_sparsity(w) for k, w in weights.items()},
                }
                return history_table(history), {"selection": selection, **weights}, info

            records[(p, seed)] = run_once(store, run_config, out, train_fn)

    return summarize(config, records, out, uniform_mass(probe.word_mask, probe.attention_mask))


def summarize(config, records, out: Path, chance: float) -> dict:
    import matplotlib.pyplot as plt

    ps = [float(p) for p in config["ps"]]
    rows, curves = [], {}
    for p in ps:
        runs = [records[(p, s)] for s in config["seeds"]]
        accs = [series(r, "test_accuracy") for r in runs]
        curves[p] = (accs[0][0], *mean_std([a[1] for a in accs]))
        final = np.array([a[1][-1] for a in accs]) * 100
        best = np.array([a[1].max() for a in accs]) * 100
        keyword = np.array([r.info["keyword_attention"] for r in runs])
        rows.append(
            {
                "p": p,
                "final_accuracy": [final.mean(), final.std()],
                "max_accuracy": [best.mean(), best.std()],
                "keyword_attention": [keyword.mean(), keyword.std()],
                "probe_accuracy": float(np.mean([r.info["probe_accuracy"] for r in runs])),
                **{
                    f"hoyer_{m}": float(np.mean([r.info[f"hoyer_{m}"] for r in runs]))
                    for m in "KQV"
                },
                **{
                    f"small_{m}": float(np.mean([small_share(r.arrays[m]) for r in runs]))
                    for m in "KQV"
                },
                "seconds_per_run": float(np.mean([r.info["seconds"] for r in runs])),
                "paper_max_accuracy": PAPER_ACCURACY.get(p),
                "paper_keyword_attention": PAPER_KEYWORD_ATTENTION.get(p),
            }
        )
    by_p = {r["p"]: r for r in rows}

    figures = []
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for p, (steps, mean, std) in curves.items():
        ax.plot(steps, 100 * mean, label=f"ℓ{p:g}-MD")
        ax.fill_between(steps, 100 * (mean - std), 100 * (mean + std), alpha=0.25)
    ax.set(xlabel="step", ylabel="test accuracy (%)", title="text-md: mean ± std over seeds")
    ax.legend()
    figures += save_figure(fig, out, "text_md_accuracy")

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5), sharey=True)
    for ax, m in zip(axes, "KQV"):
        for p in ps:
            w = np.concatenate([records[(p, s)].arrays[m] for s in config["seeds"]])
            bins = np.logspace(-8, 0.5, 60)
            share = np.full(w.size, 1.0 / w.size)  # bar height = share of entries in the bin
            ax.hist(
                np.abs(w) + 1e-12, bins=bins, weights=share, histtype="step", label=f"ℓ{p:g}-MD"
            )
        ax.set(xscale="log", xlabel=f"|{m} weight|", title=f"{m} weights (all seeds, layers)")
    axes[0].set_ylabel("share of entries")
    axes[0].legend()
    figures += save_figure(fig, out, "text_md_weight_histograms")

    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    means = [by_p[p]["keyword_attention"][0] for p in ps]
    stds = [by_p[p]["keyword_attention"][1] for p in ps]
    ax.bar([f"ℓ{p:g}" for p in ps], means, yerr=stds, capsize=4)
    ax.axhline(chance, color="k", ls="--", lw=1, label=f"uniform attention ({chance:.2f})")
    ax.set(ylabel="[CLS] attention on the sentiment word", title="token selection (probe)")
    ax.legend()
    figures += save_figure(fig, out, "text_md_keyword_attention")

    claims = keyword_claims(by_p.get(1.1), by_p.get(2.0), chance)
    table = [
        {
            "p": r["p"],
            "max test acc. (%)": fmt(*r["max_accuracy"]),
            "final test acc. (%)": fmt(*r["final_accuracy"]),
            "keyword attention": fmt(*r["keyword_attention"]),
            "paper max acc. (IMDb)": fmt(*r["paper_max_accuracy"])
            if r["paper_max_accuracy"]
            else "",
            "paper keyword attention": r["paper_keyword_attention"] or "",
            "near-zero share K/Q/V": "/".join(f"{r[f'small_{m}']:.3f}" for m in "KQV"),
            "Hoyer K/Q/V": "/".join(f"{r[f'hoyer_{m}']:.3f}" for m in "KQV"),
        }
        for r in rows
    ]
    return {"claims": claims, "tables": {"text_md": table}, "rows": rows, "chance": chance,
            "figures": figures, **run_totals(records)}  # fmt: skip


TEXT_MD_CLAIMS = (
    "ℓ1.1-MD reaches a higher max test accuracy than ℓ2-MD (GD): paper 83.47 vs 81.66",
    "ℓ1.1-MD puts more [CLS] attention on the key word than GD (paper: 0.44 / 0.31)",
    "ℓ1.1-MD gives sparser K, Q, V weights than GD: more entries below 1% of the RMS entry",
)


def keyword_claims(lo: dict | None, mid: dict | None, chance: float) -> list[Claim]:
    """ℓ1.1-MD against ℓ2-MD from their summary rows (None: that p was not run)."""
    if not (lo and mid):
        return [not_applicable(c, "needs runs of both p = 1.1 and p = 2") for c in TEXT_MD_CLAIMS]
    return [
        Claim(
            TEXT_MD_CLAIMS[0],
            lo["max_accuracy"][0] > mid["max_accuracy"][0],
            {"l1.1": lo["max_accuracy"], "l2": mid["max_accuracy"]},
        ),
        Claim(
            TEXT_MD_CLAIMS[1],
            lo["keyword_attention"][0] > mid["keyword_attention"][0],
            {"l1.1": lo["keyword_attention"], "l2": mid["keyword_attention"], "chance": chance},
        ),
        Claim(
            TEXT_MD_CLAIMS[2],
            all(lo[f"small_{m}"] > mid[f"small_{m}"] for m in "KQV"),
            {
                m: {
                    "l1.1": lo[f"small_{m}"],
                    "l2": mid[f"small_{m}"],
                    "hoyer": [lo[f"hoyer_{m}"], mid[f"hoyer_{m}"]],
                }
                for m in "KQV"
            },
        ),
    ]
