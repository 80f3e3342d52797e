"""The norms by name: the one table that `metrics.parse_norm` reads and that every message, help
text and JSON schema listing the norms is made from, so that a new norm appears in them by
itself. Plain Python (no torch): the command line's help reads it.

An entrywise ℓp norm is a number p ≥ 1 (∞ included); a few have names (`NAMED_NORMS`). A
matrix norm (a norm of W as a matrix, not of its entries) is a name with its meaning, its dual
and torch.linalg.matrix_norm's name for it.
"""

from __future__ import annotations

import math

# name → what it is, in words (`metrics.Norm.meaning`)
MATRIX_NORM_MEANINGS = {
    "nuc": "nuclear: sum of singular values",
    "spectral": "spectral: largest singular value",
}
DUAL_MATRIX_NORMS = {"nuc": "spectral", "spectral": "nuc"}
MATRIX_NORM_ORDS = {"nuc": "nuc", "spectral": 2}  # torch.linalg.matrix_norm's names
MATRIX_NORMS = MATRIX_NORM_MEANINGS.keys()  # a view: a norm added to the table is among them
# every name `metrics.parse_norm` reads (lower case), in the order messages list them
NAMED_NORMS = {
    "fro": 2.0,
    **{name: name for name in MATRIX_NORMS},
    "inf": math.inf,
    "max": math.inf,
}


def meaning(value: float | str) -> str:
    """What a norm (p, or a matrix norm's name) is, in words: "entrywise ℓ2 = Frobenius",
    "nuclear: sum of singular values"."""
    if isinstance(value, str):
        return MATRIX_NORM_MEANINGS[value]
    if value == 2:
        return "entrywise ℓ2 = Frobenius"
    if math.isinf(value):
        return "entrywise ℓ∞: largest absolute entry"
    return f"entrywise ℓ{value:g}"


def norm_names(allow_matrix: bool = True) -> tuple[str, ...]:
    """The names `parse_norm` reads besides numbers; without the matrix norms' unless
    allow_matrix."""
    return tuple(n for n, v in NAMED_NORMS.items() if allow_matrix or v not in MATRIX_NORM_MEANINGS)


def allowed_norms(allow_matrix: bool = True) -> str:
    """What a norm may be, as error messages list it: '"fro", "inf", "max", "nuc", "spectral",
    a number p >= 1 or float("inf")'."""
    names = ", ".join(f'"{name}"' for name in norm_names(allow_matrix))
    return f'{names}, a number p >= 1 or float("inf")'


def norms_help() -> str:
    """What a norm may be, in words, as help texts say it: the numbers, the entrywise norms'
    names with their meanings ("2 = fro (entrywise ℓ2 = Frobenius)"), then each matrix norm
    with its meaning."""
    entrywise: dict[float, list[str]] = {}
    for name, value in NAMED_NORMS.items():
        if value not in MATRIX_NORM_MEANINGS:
            entrywise.setdefault(value, [f"{value:g}"]).append(name)
    named = "; ".join(
        f"{' = '.join(dict.fromkeys(names))} ({meaning(value)})"
        for value, names in entrywise.items()
    )
    matrix = "; ".join(f"{name} ({meaning(name)})" for name in MATRIX_NORM_MEANINGS)
    return (
        "a number p ≥ 1, the papers' entrywise ℓp norm (not NumPy's matrix ord): "
        f"{named}; or a matrix norm: {matrix}"
    )
