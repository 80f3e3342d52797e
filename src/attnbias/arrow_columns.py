"""Arrow columns to and from numpy, built from and read as their buffers.

pyarrow's converters (`pa.array`, `pa.scalar`, `Array.to_numpy`) first ask whether their input
is a pandas object, and to ask they import pandas: 0.3–0.4 s of CPU in a process that never
uses pandas, a twentieth of md-local's whole `reproduce`. The columns the store writes and
the curves read are plain (int64, float64 and UTF-8 strings, none null), so they are built
from their buffers here and read as them; anything else goes through pyarrow's converters,
as before. Each function gives what the converter it replaces gives (tests/test_arrow_columns.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

# The numeric types built and read through their buffers.
BUFFER_TYPES = {pa.int64(): np.dtype(np.int64), pa.float64(): np.dtype(np.float64)}
_ARROW_TYPES = {dtype: kind for kind, dtype in BUFFER_TYPES.items()}
# Offsets of pa.string() are int32: a column of more bytes than this is left to pa.array,
# which splits it into chunks (a ChunkedArray) below int32's limit.
_STRING_BYTES = 2**30


def numeric_column(values: np.ndarray) -> pa.Array:
    """A 1-D int64 or float64 numpy array as the Arrow array `pa.array(values)` makes: its
    type, no nulls (a NaN stays a value). Other dtypes, and masked arrays (whose masked
    entries pyarrow makes nulls), go through `pa.array`."""
    if isinstance(values, np.ma.MaskedArray):
        return pa.array(values)
    values = np.asarray(values)
    kind = _ARROW_TYPES.get(values.dtype)
    if kind is None or values.ndim != 1:
        return pa.array(values)
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def string_column(names: Sequence[str], repeat: int) -> pa.Array:
    """Each of `names` `repeat` times in a row (a, a, b, b, ...) as an Arrow string array: what
    `pa.array` makes of the same list of str (beyond 2**30 bytes, `pa.array`'s own result)."""
    # (a lone surrogate cannot be encoded: UnicodeEncodeError, as pyarrow raises)
    encoded = [name.encode() for name in names]
    if sum(map(len, encoded)) * repeat > _STRING_BYTES:
        return pa.array([name for name in names for _ in range(repeat)], type=pa.string())
    lengths = np.repeat(np.fromiter(map(len, encoded), np.int64, len(encoded)), repeat)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join(text * repeat for text in encoded)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), len(lengths), buffers)


def repeated_column(value, n: int) -> pa.Array:
    """`value` n times, as `pa.repeat(pa.scalar(value), n)` makes it: a bool, an int in int64's
    range, a float, a str or None through buffers; any other value through pyarrow."""
    if isinstance(value, bool):
        bits = np.full((n + 7) // 8, 0xFF if value else 0, dtype=np.uint8)
        if n % 8:  # the bits past the end zero, as pyarrow leaves them
            bits[-1] &= (1 << n % 8) - 1
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return numeric_column(np.full(n, value, dtype=np.int64))
    if isinstance(value, float):
        return numeric_column(np.full(n, value, dtype=np.float64))
    if isinstance(value, str):
        return string_column([value], n)
    if value is None:
        return pa.nulls(n)
    return pa.repeat(pa.scalar(value), n)


def column_numbers(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An int64 or float64 column (its chunks one after another) as the numpy array
    `column.to_numpy()` gives: where it has one chunk, a read-only view of the column's own
    buffer; else a new array. A column with nulls or of another type goes through
    `to_numpy()`."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    dtype = BUFFER_TYPES.get(column.type)
    if dtype is None or column.null_count or not chunks:
        return column.to_numpy()
    parts = []
    for chunk in chunks:
        data = chunk.buffers()[1]
        if len(chunk) == 0 or data is None:
            parts.append(np.empty(0, dtype))
            continue
        at = chunk.offset * dtype.itemsize  # a slice's values start `offset` values in
        parts.append(np.frombuffer(data, dtype=dtype, count=len(chunk), offset=at))
    if len(parts) > 1:
        return np.concatenate(parts)
    parts[0].flags.writeable = False  # a view of the column: writing to it would change it
    return parts[0]
