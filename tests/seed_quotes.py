"""The register's quotes against the seed texts, which live outside the repository.

Run where the seed texts are (`python tests/seed_quotes.py SEEDS_DIR`): it finds every quote
of a register entry marked `verbatim` in the seed texts, normalised alike, and writes where
each one is found to tests/data/seed_quotes.json; it exits 2, naming them, if some are not
found. The fast suite (tests/test_register_quotes.py) checks the register's quotes against
that file, so a quote edited or added without being found in the seed texts fails there.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import unicodedata
from pathlib import Path

VENDORED = Path(__file__).parent / "data" / "seed_quotes.json"
# a quote: '…' not inside a word (an apostrophe, "paper's", neither opens nor closes one)
QUOTE = re.compile(r"(?<!\w)'(.+?)'(?!\w)")


def normalised(text: str, quote: bool = False) -> str:
    """Lower-case words separated by single spaces: LaTeX's ℓ as the character, maths markup
    ($, _, braces, backslashes) and punctuation dropped; in a quote, [insertions] too (a
    symbol the seed text lost, filled in by us)."""
    text = text.replace("\\ell", "ℓ")
    if quote:
        text = re.sub(r"\[[^\]]*\]", " ", text)
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[$_{}\\]", "", text)
    return " ".join(re.sub(r"\W+", " ", text).split())


def quotes(entry) -> list[str]:
    """The quotes of a register entry (PaperClaim or Untested), from its where and wording."""
    return [q for field in (entry.where, entry.wording) for q in QUOTE.findall(field)]


def verbatim_quotes(entries) -> dict[str, str]:
    """Each normalised quote of the entries marked verbatim → the first entry quoting it."""
    found = {}
    for entry in entries:
        if getattr(entry, "verbatim", True):
            for q in quotes(entry):
                found.setdefault(normalised(q, quote=True), getattr(entry, "id", entry.where))
    return found


def locate(wanted: dict[str, str], seeds: dict[str, str]) -> tuple[dict, list[str]]:
    """Where each wanted quote is found in the seed texts (name → text): {quote: {"seed": name,
    "word": its first word's index}}, and the entries whose quote is not found."""
    words = {name: normalised(text).split() for name, text in seeds.items()}
    found, missing = {}, []
    for q, who in wanted.items():
        for name, seed in words.items():
            at = word_index(" ".join(seed), q)
            if at is not None:
                found[q] = {"seed": name, "word": at}
                break
        else:
            missing.append(f"{who}: '{q}'")
    return found, missing


def word_index(text: str, quote: str) -> int | None:
    """The index of the word at which `quote` (whole words) starts in `text`, or None."""
    at = f" {text} ".find(f" {quote} ")
    return None if not quote or at < 0 else text[:at].count(" ")


def main(argv: list[str]) -> int:
    from attnbias.judging.register import REGISTER, UNTESTED

    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python tests/seed_quotes.py SEEDS_DIR", file=sys.stderr)
        return 2
    paths = sorted(Path(argv[0]).glob("*.txt"))
    seeds = {p.name: p.read_text(encoding="utf-8") for p in paths}
    found, missing = locate(verbatim_quotes([*REGISTER, *UNTESTED]), seeds)
    if missing:
        print("quotes marked verbatim but not in the seed texts:", *missing, sep="\n  ")
        return 2
    data = {
        "about": "where each register quote marked verbatim is found in the seed texts, "
        "normalised by tests/seed_quotes.py; made by `python tests/seed_quotes.py SEEDS_DIR`",
        "seeds": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths},
        "quotes": dict(sorted(found.items())),
    }
    VENDORED.parent.mkdir(exist_ok=True)
    VENDORED.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(found)} quotes found in {len(seeds)} seed texts: {VENDORED}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
