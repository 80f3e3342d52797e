"""How deeply a TOML or JSON text nests, read before a parser recurses into it (config files,
and the JSON files of a results store). No torch here: the store and the commands that only
read results import it."""

from __future__ import annotations


def nesting_depth(text: str) -> int:
    """The deepest nesting of [ ] and { } in a TOML or JSON text, outside strings and comments
    (a parser recurses once a level: 50,000 levels end in RecursionError), each dot of a TOML
    dotted key counting as a level too (a.b.c = 1 makes nested tables; tomllib takes time
    quadratic in their number: 1.5 s for 8,000, hours for the 500,000 of a 1 MB config; a
    number's decimal point counts one).
    TOML's string forms are a superset of JSON's, and a parser reads from the start, so where
    this reading and a parser's part (invalid text) the parser has already stopped."""
    depth = deepest = i = dots = 0  # dots: of the dotted key being read
    n = len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else c
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                i += 2 if text[i] == "\\" and quote[0] == '"' else 1  # '…' has no escapes
            i += len(quote)
            continue
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == ".":
            dots += 1
            deepest = max(deepest, depth + dots)
        elif not (c.isalnum() or c in "_- \t"):  # the end of a key (quoted parts are skipped)
            dots = 0
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
        i += 1
    return deepest


def check_nesting(text: str, what: str, limit: int) -> None:
    """ValueError naming `what` when `text` (TOML or JSON) nests deeper than `limit`, checked
    before any parser recurses into it."""
    depth = nesting_depth(text)
    if depth > limit:
        raise ValueError(f"{what} nests {depth} levels deep (at most {limit} are read)")
