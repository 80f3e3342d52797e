"""Hostile inputs (issue 28, item 4): sizes checked on what will be allocated, before it is;
memory estimated before anything large is built; optimiser state validated whole before any
of it is applied; a peer that is not a Dask scheduler refused within a bounded time. Each is
one line on the command line (exit code 2, no traceback), a named error in the library."""

import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from attnbias._validate import as_tensor
from attnbias.cli import main
from attnbias.npz import load_npz

pytestmark = pytest.mark.usefixtures("one_thread")


def one_error_line(capsys) -> str:
    """The stderr of a failed command: exactly one line, no traceback, no warning."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnbias: error: "), err
    return err


def peak_bytes(call) -> int:
    """The peak of memory traced (numpy's allocations included) while call() runs."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- sizes counted as what will be allocated ---------------------------------------------------


def test_a_zero_itemsize_structured_x_is_refused_before_any_conversion(tmp_path, capsys):
    # np.dtype([]) takes 0 bytes an entry: the file is tiny, its float64 conversion 77 MB
    empty = np.dtype([])
    path = tmp_path / "zero.npz"
    np.savez(path, X=np.empty((200, 16, 3000), empty), z=np.empty((200, 3000), empty))
    assert path.stat().st_size < 2000
    codes = []
    peak = peak_bytes(lambda: codes.append(main(["svm", str(path)])))
    assert codes == [2]
    assert "holds records" in one_error_line(capsys)
    assert peak < 10 * 10**6  # nothing of the conversion's size was allocated
    with pytest.raises(ValueError, match="'X' holds records"):
        load_npz(path, 10**9, "x")


@pytest.mark.parametrize(
    "dtype, problem",
    [("U2", "<U2 values"), ("M8[D]", "datetime64"), ("S3", "|S3 values")],
)
def test_npz_arrays_that_are_not_numbers_are_refused(tmp_path, dtype, problem):
    np.savez(tmp_path / "a.npz", X=np.zeros(3, dtype))
    with pytest.raises(ValueError, match=rf"'X' holds {problem}"):
        load_npz(tmp_path / "a.npz", 10**6, "x")


def test_a_zero_size_string_dtype_is_refused_from_its_header(tmp_path):
    # <U0 counts 0 bytes; numpy reads it as <U1: 400 GB for this shape
    npz_with_header(
        tmp_path / "u.npz", b"{'descr': '<U0', 'fortran_order': False, 'shape': (100000000000,)}"
    )
    with pytest.raises(ValueError, match="'X' holds <U0 values"):
        load_npz(tmp_path / "u.npz", 10**6, "x")


def test_complex_x_is_refused_not_truncated_and_reported_optimal(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 4, 2)) + 1j * rng.standard_normal((3, 4, 2))
    np.savez(tmp_path / "c.npz", X=X, z=rng.standard_normal((3, 2)), alpha=np.zeros(3, int))
    assert main(["svm", str(tmp_path / "c.npz")]) == 2
    line = one_error_line(capsys)
    assert "'X' is complex" in line and "imaginary" in line
    # the library refuses it too, before converting, naming the argument
    for x in (X, torch.from_numpy(X)):
        with pytest.raises(TypeError, match="X must hold real numbers"):
            as_tensor(x, "X")
    with pytest.raises(TypeError, match="X must be a numeric array, got dtype"):
        as_tensor(np.empty((4, 4), np.dtype([])), "X")


def test_narrow_dtypes_count_as_the_float64_they_become(tmp_path, capsys):
    # int8: 1 MB in the file, 8 MB as float64, which the solver converts it to
    np.savez(tmp_path / "i.npz", X=np.ones((100, 100, 100), np.int8), z=np.ones((100, 100)))
    assert main(["svm", str(tmp_path / "i.npz"), "--max-array-mb", "4"]) == 2
    line = one_error_line(capsys)
    assert "'X' of shape (100, 100, 100) and dtype int8 takes 8.0 MB as float64" in line
    # the store's own loader counts them as they are
    assert load_npz(tmp_path / "i.npz", 4 * 10**6, "x")["X"].dtype == np.int8


def npz_with_header(path: Path, header: bytes) -> None:
    """An .npz whose X.npy has this (version 1.0) header, padded as numpy pads it."""
    padded = header + b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    member = b"\x93NUMPY\x01\x00" + len(padded).to_bytes(2, "little") + padded + bytes(16)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("X.npy", member)


def test_an_npz_header_that_does_not_parse_is_one_short_line(tmp_path, capsys):
    nested = b"(" * 3000 + b")" * 3000
    npz_with_header(tmp_path / "h.npz", b"{'descr': " + nested + b", 'shape': (1,)}")
    assert main(["svm", str(tmp_path / "h.npz")]) == 2
    line = one_error_line(capsys)
    assert "is not a readable .npz file" in line and len(line) < 500
