"""text-md's tables: per p and variant, paired differences from ℓ2, one row per run. Its
figures are text_md_figures.py, the McNemar test beside them mcnemar.py; the claims are judged
in text_md.py."""

from __future__ import annotations

import math

import numpy as np

from ..judging import papers
from ..judging.claims import mean_effect, paired_difference
from ..store import DIVERGED
from .compare import rates_text
from .mcnemar import pooled_mcnemar
from .real_runs import fmt

PAPER_ACCURACY = papers.MD_IMDB_ACCURACY
PAPER_KEYWORD_ATTENTION = papers.MD_IMDB_KEYWORD_ATTENTION
PAPER_COUNTS = papers.MD_IMDB_COUNTS
ABSOLUTE_THRESHOLD = papers.MD_IMDB_THRESHOLD  # the paper's |w| threshold
VARIANTS = {"seeds": "different init", "order": "same init, data order"}  # their table labels
REFERENCE = 2.0  # ℓ2-MD is gradient descent: the p every other p is compared with


def arm_name(p: float) -> str:
    return f"ℓ{p:g}-MD"


def effect_list(values) -> list[float]:
    """[mean, low, high] of the per-run values' 95 % CI (mean_effect)."""
    e = mean_effect(values)
    return [e.estimate, e.low, e.high]


def variant_row(p: float, c: dict, variant: str) -> dict:
    """Per p and variant: each quantity's [mean, CI low, CI high] over runs (diverged runs left
    out), how many runs reached the target, the rate and its grid."""
    v = c["values"]
    quantities = ["test_accuracy", "val_accuracy", "best_test_accuracy_unselected",
                  "final_test_accuracy", "final_train_accuracy", "half_test_accuracy",
                  "half_train_accuracy", "steps_run", "chosen_step",
                  "keyword_normalised", "keyword_raw", "keyword_chance_normalised",
                  "keyword_chance_raw", "probe_accuracy", "seconds_per_step",
                  *(f"{k}_{m}" for k in ("above_abs", "above_init", "threshold", "small", "hoyer")
                    for m in "KQV")]  # fmt: skip
    return {
        "p": p,
        "variant": variant,
        "runs": len(c["reached"]),
        "reached_target": int(np.sum(c["reached"])),
        "diverged": c["diverged"],
        "rate_search": c["search"].summary() if c["search"].scores else {},
        **{q: effect_list(v[q]) for q in quantities},
    }


def ci(triple, digits: int = 2) -> str:
    mean, low, high = triple
    if not (math.isfinite(low) and math.isfinite(high)) or low == high:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def table_row(r: dict) -> dict:
    """A row of the text-md table: means with their 95 % CI over runs."""
    p = r["p"]
    paper = PAPER_COUNTS.get(p)

    def counts(kind):
        return "/".join(f"{r[f'{kind}_{m}'][0]:,.0f}" for m in "KQV")

    budget = r.get("protocol") == "budget"
    return {
        "model": arm_name(p),
        "variant": VARIANTS[r["variant"]],
        **(
            {"runs": str(r["runs"])}
            if budget
            else {"runs at 99.5 % / runs": f"{r['reached_target']}/{r['runs']}"}
        ),
        "rates tried (chosen)": rates_text(r["rate_search"]),
        "steps": ci(r["steps_run"], 0),
        **({"train acc. at E/2 (%)": ci(r["half_train_accuracy"])} if budget else {}),
        "final train acc. (%)": ci(r["final_train_accuracy"]),
        "val. acc. (%)": ci(r["val_accuracy"]),
        **({"test acc. at E/2 (%)": ci(r["half_test_accuracy"])} if budget else {}),
        "test acc. (%) [95 % CI]": ci(r["test_accuracy"]),
        "best test acc. (%), not selected": ci(r["best_test_accuracy_unselected"]),
        "paper best (IMDb)": fmt(*PAPER_ACCURACY[p]) if p in PAPER_ACCURACY else "",
        "key word, normalised": ci(r["keyword_normalised"], 3),
        "chance (normalised)": f"{r['keyword_chance_normalised'][0]:.3f}",
        "key word, raw": ci(r["keyword_raw"], 4),
        "chance (raw)": f"{r['keyword_chance_raw'][0]:.4f}",
        "paper key word": PAPER_KEYWORD_ATTENTION.get(p, ""),
        "threshold K/Q/V": "/".join(f"{r[f'threshold_{m}'][0]:.3g}" for m in "KQV"),
        "count > threshold K/Q/V": counts("above_init"),
        "count > 0.06 K/Q/V": counts("above_abs"),
        "paper K/Q/V (> 0.06)": "/".join(f"{paper[m]:,}" for m in "KQV") if paper else "",
        "near-zero share K/Q/V": "/".join(f"{r[f'small_{m}'][0]:.3f}" for m in "KQV"),
        "s/step": f"{r['seconds_per_step'][0]:.3f}",
    }


def reference_rows(references: dict) -> list[dict]:
    """The reference models as rows of the text-md table (accuracy columns only)."""
    rows = []
    for name, ref in references.items():
        if name == "run_keys":
            continue
        rows.append({"model": ref["label"], "variant": "reference",
                     "val. acc. (%)": f"{ref['val_accuracy']:.2f}",
                     "test acc. (%) [95 % CI]": f"{ref['test_accuracy']:.2f}"})  # fmt: skip
    return rows


PAIRED = (
    ("test_accuracy", "test acc. (pp)", 2),
    ("half_test_accuracy", "test acc. at E/2 (pp)", 2),
    ("keyword_normalised", "key word, normalised", 3),
    *((f"above_init_{m}", f"count > threshold, {m}", 0) for m in "KQV"),
    *((f"above_abs_{m}", f"count > 0.06, {m}", 0) for m in "KQV"),
    *((f"small_{m}", f"near-zero share, {m}", 4) for m in "KQV"),
)


def paired_rows(collected: dict[float, dict]) -> list[dict]:
    """Per p other than 2: each quantity's paired difference from ℓ2 over the seeds both have,
    with its 95 % CI, and McNemar on the pooled test predictions."""
    if REFERENCE not in collected:
        return []
    ref = collected[REFERENCE]
    rows = []
    for p, c in collected.items():
        if p == REFERENCE:
            continue
        row = {"comparison": f"{arm_name(p)} − {arm_name(REFERENCE)}"}
        for key, _, _ in PAIRED:
            e = paired_difference(c["values"][key], ref["values"][key])
            row[key] = [e.estimate, e.low, e.high, e.n]
        row["mcnemar"] = pooled_mcnemar(c["correct"], ref["correct"])
        rows.append(row)
    return rows


def paired_table_row(row: dict) -> dict:
    out = {"comparison": row["comparison"]}
    for key, label, digits in PAIRED:
        out[f"{label} [95 % CI]"] = ci(row[key][:3], digits)
    m = row["mcnemar"]
    out["McNemar (pooled): only a / only b, p"] = (
        f"{m['a_right_b_wrong']} / {m['b_right_a_wrong']}, p = {m['p_value']:.3g}" if m else ""
    )
    out["seeds"] = row["test_accuracy"][3]
    return out


def timing(collected: dict[float, dict]) -> dict:
    """Per p: mean training seconds per step and steps run (for the full run's time)."""
    return {
        f"{p:g}": {
            "seconds_per_step": float(np.nanmean(c["values"]["seconds_per_step"])),
            "steps_run": float(np.mean(c["values"]["steps_run"])),
        }
        for p, c in collected.items()
    }


def run_rows(records) -> list[dict]:
    """One row per run: where it stopped and why, the checkpoint chosen on validation, its
    validation and test accuracy there."""
    rows = []
    for (variant, p, _), r in sorted(
        records.items(), key=lambda kv: (kv[0][0] != "seeds", *kv[0][1:])
    ):
        info = r.info
        goal = r.config["target_train_accuracy"]
        target = f"{100 * goal:g} % reached" if goal is not None else ""
        end = "step cap" if goal is not None else "budget (all steps)"
        stop = DIVERGED if r.status == DIVERGED else (
            target if info["reached_target"] else end)  # fmt: skip
        rows.append({
            "p": p,
            "variant": VARIANTS[variant],
            "init seed": r.config["init_seed"],
            "order seed": r.config["order_seed"],
            "lr": r.config["optimizer"]["lr"],
            "steps": info["steps_run"],
            "stopped by": stop,
            "final train acc. (%)": f"{100 * info['final_train_accuracy']:.2f}",
            "chosen step": info.get("chosen_step", ""),
            "val. acc. (%)": f"{100 * info.get('chosen_val_accuracy', math.nan):.2f}",
            "test acc. (%)": f"{100 * info.get('chosen_test_accuracy', math.nan):.2f}",
        })  # fmt: skip
    return rows
