""".npz files from anywhere, read safely: every array's shape and dtype is read from its .npy
header first and checked against a size limit before anything is decompressed or allocated
(a few MB of zip can unpack to many GB); nothing is ever unpickled.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numpy.lib import format as npy

MAX_MEMBERS = 4096  # np.savez writes one member per array; far more is not one of ours
MB = 10**6
# dtype kinds read: bool, integers, floats, complex (the caller may refuse complex: `as_dtype`)
NUMERIC_KINDS = "biufc"
MAX_REASON_CHARS = 300  # numpy's header errors quote the whole header: one readable line


class ArrayTooLarge(ValueError):
    """An array (or all of them together) is larger than the caller's limit."""


def _header(f):
    """(shape, Fortran order, dtype) from the .npy header at the start of file object f."""
    version = npy.read_magic(f)
    if version == (1, 0):
        return npy.read_array_header_1_0(f)
    if version == (2, 0):
        return npy.read_array_header_2_0(f)
    # 3.0 only differs for non-Latin-1 field names, which no array of ours has
    raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")


def _read_data(f, shape, fortran: bool, dtype) -> np.ndarray:
    """The array's data after its header: exactly the bytes the checked header announced."""
    flat = np.empty(math.prod(shape), dtype=dtype)
    buffer = flat.view(np.uint8) if dtype.itemsize else memoryview(b"")
    done = 0
    while done < len(buffer):
        got = f.readinto(buffer[done:])
        if not got:
            raise ValueError(f"the data ends after {done} of {len(buffer)} bytes")
        done += got
    return flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)


FORMAT_ERRORS = (OSError, EOFError, zipfile.BadZipFile, zlib.error, ValueError, SyntaxError)


def _headers(archive: zipfile.ZipFile) -> dict:
    """{name: (shape, Fortran order, dtype)} of every member, from the headers alone."""
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise ValueError(f"it has {len(members)} members (at most {MAX_MEMBERS} are read)")
    headers = {}
    for info in members:
        if not info.filename.endswith(".npy"):
            raise ValueError(f"member {info.filename!r} is not a .npy array")
        name = info.filename[: -len(".npy")]
        with archive.open(info) as f:
            headers[name] = shape, _, dtype = _header(f)
        if any(not isinstance(n, int) or n < 0 for n in shape):
            raise ValueError(f"array {name!r} has an invalid shape {shape}")
        problem = dtype_problem(dtype)
        if problem is not None:
            raise ValueError(f"array {name!r} {problem}")
    return headers


def dtype_problem(dtype: np.dtype) -> str | None:
    """Why an array of this dtype is not read ("holds …"), or None for plain numbers. Objects
    would need unpickling; records and zero-size items (`np.dtype([])`) make a size check
    count nothing while a conversion to numbers allocates 8 bytes an entry."""
    if dtype.hasobject:
        return (
            f"holds Python objects (dtype {dtype}), which would have to be unpickled; only "
            "plain arrays are read"
        )
    if dtype.names is not None or dtype.subdtype is not None:
        return f"holds records (structured dtype {dtype}); only plain numeric arrays are read"
    if dtype.kind not in NUMERIC_KINDS or dtype.itemsize == 0:
        return (
            f"holds {dtype} values (kind {dtype.kind!r}, {dtype.itemsize} bytes each); only "
            "bool, integer, float and complex arrays are read"
        )
    return None


def decoded_bytes(shape: tuple, dtype: np.dtype, as_dtype: np.dtype | None = None) -> int:
    """Bytes an array of this shape takes once read, and once converted to as_dtype (the
    larger: a float32 file becomes float64 at twice its size)."""
    itemsize = dtype.itemsize if as_dtype is None else max(dtype.itemsize, as_dtype.itemsize)
    return math.prod(shape) * itemsize


def reason(err: BaseException) -> str:
    """An exception's message as one short line."""
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def load_npz(
    path: str | Path,
    max_bytes: int,
    raise_with: str,
    file: BinaryIO | None = None,
    as_dtype: np.dtype | type | str | None = None,
) -> dict[str, np.ndarray]:
    """Every array of an .npz file (read from `file` if given, an open binary file: path then
    only names it in messages), each and all together at most max_bytes, checked from the
    headers before anything is decompressed; ArrayTooLarge names the array, its size and
    `raise_with`, the option that raises the limit. as_dtype: the real dtype the caller will
    convert the arrays to; sizes are counted in it (when larger) and complex arrays, which it
    would truncate, are refused. ValueError for anything that is not an .npz of plain numeric
    arrays (object arrays would need unpickling: never done; records and zero-size items are
    refused: their size says nothing of a conversion's)."""
    path = Path(path)
    as_dtype = None if as_dtype is None else np.dtype(as_dtype)
    try:
        # one open file: both passes read the same bytes
        with zipfile.ZipFile(path if file is None else file) as archive:
            headers = _headers(archive)
            if as_dtype is not None:
                for name, (_, _, dtype) in headers.items():
                    if dtype.kind == "c":
                        raise ValueError(
                            f"array {name!r} is complex ({dtype}); it is read as {as_dtype}, "
                            "which would drop the imaginary part: give real numbers"
                        )
            sizes = {k: decoded_bytes(s, dtype, as_dtype) for k, (s, _, dtype) in headers.items()}
            as_what = "" if as_dtype is None else f" as {as_dtype}"
            for name, size in sizes.items():
                shape, _, dtype = headers[name]
                if size > max_bytes:
                    grows = as_dtype is not None and as_dtype.itemsize > dtype.itemsize
                    raise ArrayTooLarge(
                        f"{path}: array {name!r} of shape {shape} and dtype {dtype} takes "
                        f"{size / MB:,.1f} MB{as_what if grows else ''}, more than the limit of "
                        f"{max_bytes / MB:,.1f} MB; raise it with {raise_with}"
                    )
            if sum(sizes.values()) > max_bytes:
                raise ArrayTooLarge(
                    f"{path}: its {len(sizes)} arrays take {sum(sizes.values()) / MB:,.1f} MB "
                    f"together{as_what}, more than the limit of {max_bytes / MB:,.1f} MB; raise "
                    f"it with {raise_with}"
                )
            arrays = {}
            for name, checked in headers.items():
                with archive.open(f"{name}.npy") as f:
                    if _header(f) != checked:  # the file changed under us
                        raise ValueError(f"array {name!r} changed while it was read")
                    arrays[name] = _read_data(f, *checked)
    except ArrayTooLarge:
        raise
    except FORMAT_ERRORS as err:
        raise ValueError(
            f"{path} is not a readable .npz file of plain arrays ({reason(err)})"
        ) from err
    return arrays
