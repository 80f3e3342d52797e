"""A Markdown report of experiment summaries: each figure and its claim table (docs/RESULTS.md)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..config import ExperimentConfig
from ..store import ResultsStore
from . import forest
from .claims import NOT_SUPPORTED, STATUSES, status_of, verdict_columns, verdict_text, verdict_word

# The repository's docs/ (present in a clone, absent from an installed wheel).
DOCS = Path(__file__).resolve().parents[3] / "docs"

# The report's own forest plot, of the claims of its summaries: not the register's
# claims_forest.png, which `attnbias claims --write` draws from every summary under its root.
RESULTS_FOREST = "results_forest"
BAND = "lines: mean over seeds, shaded: ± 1 std"
# What to look at in each figure: by experiment name, or by the figure's name ending.
CAPTIONS = {
    "md-local": "Directional Bregman divergence D_ψp(Ŵ_mm, Ŵ_t) between the normalised "
    "ℓp-AttSVM solution (row: p) and the normalised iterate of ℓq mirror descent (column: q), "
    f"{BAND}. Look at the diagonal: each algorithm approaches the SVM of its own p, while "
    "off the diagonal the divergence levels off. Bottom row: one run from W₀ = 0; its two "
    "largest normalised entries (solid) approach the SVM's (dashed).",
    "md-joint": "ℓp mirror descent trains W and the head v jointly from a small random start "
    f"({BAND}). "
    "Top: attention moves onto the optimal tokens and the head's probability σ(y f) tends to "
    "1. Look at the divergence and angle panels: W and v both turn towards the ℓp SVM of their "
    "own p (angle → 0).",
    "ngd-fixed": f"GD, normalized GD, NGD with momentum and Polyak steps, fixed head ({BAND}). "
    "Look at the right panel: 1 − alignment with the Att-SVM of the globally optimal tokens "
    "falls fastest for the normalized methods, Polyak leads early; ‖W_t‖ grows linearly under "
    "NGD and slowly under GD. The loss tends to L*, the loss with all attention on the optimal "
    "tokens.",
    "antipodal": f"As ngd-fixed, on data whose optimal tokens are ±μ ({BAND}). Look at the "
    "right panel: the normalized methods still reach the Att-SVM direction.",
    "ngd-joint": f"Joint training of W and v from zero on the dm data ({BAND}). The loss "
    "axis shows 12 decades: NGD and joint-NGD keep falling below it (L* = 0). Look at the "
    "alignment panels: W and v align with their max-margin solutions, fastest under the "
    "normalized methods; GD is slowest.",
    "kq-nuclear": f"W = KQᵀ trained by normalized GD against W trained directly ({BAND}). Look "
    "at the two left panels: the factorised W ends closer to the nuclear-norm Att-SVM, the "
    "direct W to the Frobenius one.",
    "atlas": "Margin gap 1 − γ_N(W_t)/γ*_N in the norm N, for each optimiser; 0 means "
    "W_t/‖W_t‖_N is a max-margin direction of that norm (gaps above 1: some margin still "
    "negative). Heatmap: the median final gap (optimiser × norm, log colour scale), each "
    "optimiser's own norm outlined: look for the smallest gap of each row in its outlined cell, "
    "and compare the Adam row with SignGD's and the Muon row with SpectralDescent's. Curves: "
    f"the gap against steps, one panel per norm ({BAND}; thick: the owner of that norm).",
    "_accuracy": "Validation (left) and test (right) accuracy of every text-md run with its "
    "own initial weights, against steps (every run trains the same 30 epochs; under --paper "
    "runs stop at 99.5 % train accuracy); dots: the "
    "checkpoint each run reports, chosen on validation alone. Horizontal lines: the reference "
    "models on the same split (majority class, bag-of-words logistic regression, fine-tuned "
    "MiniLM). Look at where the dots sit between the lines.",
    "_weight_histograms": "Distribution of |entry| of the trained K, Q, V weights (all seeds "
    "and blocks); dashed: the paper's threshold 0.06; dotted: the threshold mapped to our "
    "layers' initial scale (2.04 initial RMS entries, as 0.06 is on the paper's). Look at the "
    "mass right of the dotted line: the paper finds fewer entries there under ℓ1.1-MD than "
    "under GD.",
    "_keyword_attention": "Last-layer [CLS] attention on the key word of held-out sentences with "
    "exactly one VADER-lexicon word (mean and 95 % CI over seeds): left, min–max normalised over "
    "the sentence (the paper's metric); right, raw. Dashed: chance (a random token; uniform "
    "attention).",
    "_paired_differences": "Each p's difference from ℓ2-MD, paired by seed (same initial "
    "weights and data order), mean and 95 % t interval: what the text-md verdicts read. A CI "
    "clear of 0 on the claimed side supports a claim; one across 0 leaves it inconclusive.",
    "_loss": "Train loss (moving average, log scale; mean ± std over seeds, shaded) and test "
    "accuracy (error bars: ± std) against steps. Look at which optimiser's loss falls fastest.",
    "_norms": "Per layer, for one seed: norm growth ‖θ_t‖/‖θ_0‖ (top) and movement "
    "‖θ_t − θ_0‖/‖θ_0‖ (bottom, log scale) under each optimiser.",
}


def caption(name: str, figure: str) -> str:
    """What a reader should look at in figure `figure` (a file stem) of experiment `name`."""
    if name in CAPTIONS:
        return CAPTIONS[name]
    return next((text for end, text in CAPTIONS.items() if figure.endswith(end)), "")


def doc_link(title: str, document: str, report_dir: Path) -> str:
    """A Markdown link from report_dir to docs/document, or the plain name when this
    installation has no docs/ (a link to nowhere is worse than none)."""
    target = DOCS / document
    if not target.exists():
        return f"{title} (docs/{document} in the attnbias repository)"
    return f"[{title}]({Path(os.path.relpath(target, report_dir.resolve())).as_posix()})"


def short_numbers(value):
    """Numbers to 4 significant digits, recursively, for a readable evidence column."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: short_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [short_numbers(v) for v in value]
    return value


def _markdown_table(rows: list[dict]) -> list[str]:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(str(short_numbers(row.get(c, ""))) for c in columns) + " |")
    return lines


def verdict_counts(summary: dict) -> str:
    """How many claims have each verdict ("3 supported, 1 inconclusive, 1 not applicable"),
    with the diverged runs and the quick-scale note when there are any."""
    statuses = [status_of(c) for c in summary["claims"]]
    text = ", ".join(f"{statuses.count(s)} {s}" for s in STATUSES if statuses.count(s))
    text = f"{len(statuses)} claims: {text}" if statuses else "no claims"
    if summary.get("diverged"):
        text += f"; {len(summary['diverged'])} diverged run(s) left out"
    if "scale" in summary:
        text += f" ({summary['scale']})"
    return text


def verdict_mark(claim: dict) -> str:
    """A claim's verdict in a table, in the register's words, with its reasons in brackets when
    inconclusive; **not supported** in bold (what a reader must not miss)."""
    word, text = verdict_word(claim), verdict_text(claim)
    return f"**{word}**{text[len(word) :]}" if status_of(claim) == NOT_SUPPORTED else text


def copy_figure(data: bytes, target: Path) -> None:
    """Write a figure's bytes to target, replacing whatever is there (a link too, itself)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def differs(path: Path, data: bytes) -> bool:
    """Whether a file at path holds other bytes than `data` (False if there is none);
    ValueError if path is a directory."""
    if path.is_dir():
        raise ValueError(f"{path}: a directory; give the path of a file")
    if not path.exists():
        return False
    with open(path, "rb") as f:  # enough to tell whether it differs
        return f.read(len(data) + 1) != data


def forest_figure(summaries: dict[str, dict]) -> bytes | None:
    """The PNG of the forest plot of every measured claim part of `summaries` (by experiment),
    or None when none was measured."""
    claims = {name: summary.get("claims", []) for name, summary in summaries.items()}
    with tempfile.TemporaryDirectory() as drawing:
        drawn = forest.draw(
            claims, Path(drawing), RESULTS_FOREST, formats=("png",), title="Results"
        )
        return Path(drawn[0]).read_bytes() if drawn else None


def write_report(
    summaries: dict[str, dict],
    configs: dict[str, dict],
    path: Path,
    command: str,
    roots: Mapping[str, Path] | None = None,
    force: bool = False,
) -> Path:
    """Write the report to `path`, copying each experiment's PNG figure into path's
    figures/ directory, with the forest plot of all its claims (figures/results_forest.png);
    `command` is the command line that regenerates it, `configs` the resolved config of each
    experiment (its constants), `roots` each experiment's results directory (its --out). A
    figure is copied only if it is a regular file of a publication in its experiment's
    directory and matches that publication's manifest (sha256): a summary naming anything else
    (a symbolic link, a path outside) is refused (store.UnsafeStore). A report or figure file
    already there that differs is replaced only with `force` (ValueError before anything is
    written otherwise), as `claims --write` does."""
    path = Path(path)
    roots = roots or {}
    figures = path.parent / "figures"
    copies = {}  # figure file → its verified bytes, written once everything is known
    lines = [
        "# Results",
        "",
        f"Generated by `{command}`; every number below comes from that run",
        "(its `summary.json` per experiment). Figures: mean ± std over seeds, as each caption",
        "says. The mathematics and the experiments' constants: "
        f"{doc_link('the theory page', 'theory.md', path.parent)}; methods of the real-data "
        f"experiments: {doc_link('REAL_DATA.md', 'REAL_DATA.md', path.parent)}.",
        "",
    ]
    if (drawn := forest_figure(summaries)) is not None:
        copies[figures / f"{RESULTS_FOREST}.png"] = drawn
        register = doc_link("the claims register", "CLAIMS.md", path.parent)
        lines += [
            f"![every measured claim part of this report against its threshold]"
            f"(figures/{RESULTS_FOREST}.png)",
            "",
            f"*{forest.CAPTION} Each claim's row, with the paper it tests: {register}.*",
            "",
        ]
    for name, summary in summaries.items():
        svms = f", {summary['svms_solved']} SVMs solved" if "svms_solved" in summary else ""
        # a sweep's seconds are this invocation's: say how many runs it found finished
        reused = f" ({summary['reused']} found finished)" if summary.get("reused") else ""
        lines += [
            f"## {name}",
            "",
            f"{summary.get('runs', '?')} runs{reused}{svms}; {verdict_counts(summary)}.",
            "",
        ]
        pngs = [Path(f) for f in summary.get("figures", []) if f.endswith(".png")]
        if pngs and name not in roots:
            raise ValueError(f"write_report: no results directory given for {name}'s figures")
        for figure in pngs:
            target = (
                f"{name}.png"
                if len(pngs) == 1 or figure.stem == name
                else f"{name}-{figure.stem}.png"
            )
            copies[figures / target] = ResultsStore(roots[name]).published_file(figure)
            lines += [f"![{name}](figures/{target})", ""]
            if text := caption(name, figure.stem):
                lines += [f"*{text}*", ""]
        for title, rows in summary.get("tables", {}).items():
            lines += [f"**{title}**", "", *_markdown_table(rows), ""]
        lines += [
            "| claim | verdict | rule | effect [95 % CI], n | sensitivity |",
            "| --- | --- | --- | --- | --- |",
        ]
        for claim in summary["claims"]:
            c = verdict_columns(claim)
            mark = verdict_mark(claim)
            lines.append(
                f"| {claim['claim']} | {mark} | {c['rule']} | {c['effect']} | {c['sensitivity']} |"
            )
        raw = json.dumps(short_numbers([{c.get("id", ""): c["evidence"]} for c in
                                         summary["claims"]]), ensure_ascii=False)  # fmt: skip
        lines += ["", f"<details><summary>raw evidence</summary>\n\n`{raw}`\n</details>"]
        if "slopes" in summary:
            lines += [
                "",
                f"Fitted log-log slopes: `{json.dumps(short_numbers(summary['slopes']))}`",
            ]
        config = configs[name]
        config = json.dumps(
            config.to_dict() if isinstance(config, ExperimentConfig) else config,
            ensure_ascii=False,
        )
        lines += ["", f"<details><summary>config</summary>\n\n`{config}`\n</details>", ""]
    text = "\n".join(lines).encode()
    changed = [p for p, data in [(path, text), *copies.items()] if differs(p, data)]
    if changed and not force:
        raise ValueError(
            f"--report {path}: {changed[0]} exists and differs from this report"
            f"{f' (and {len(changed) - 1} more)' if len(changed) > 1 else ''}; --force replaces it"
        )
    figures.mkdir(parents=True, exist_ok=True)
    for target, data in copies.items():
        copy_figure(data, target)
    path.write_bytes(text)
    return path
