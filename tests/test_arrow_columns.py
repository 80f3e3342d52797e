"""arrow_columns gives what pyarrow's converters give (type, values, NaN kept as a value, no
nulls) without importing pandas, and the store's tables and curves built with it equal those
built by the converters."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from attnbias.arrow_columns import column_numbers, numeric_column, repeated_column, string_column
from attnbias.curves import record_curve
from attnbias.store import ResultsStore, tidy

NUMBERS = [
    np.array([3, -1, 2**62, -(2**63), 0], dtype=np.int64),
    np.array([1.5, np.nan, np.inf, -np.inf, -0.0, 5e-324, 1.7976931348623157e308]),
    np.array([], dtype=np.int64),
    np.array([], dtype=np.float64),
    np.arange(12.0)[::3],  # not contiguous
]


def value_key(v):
    """A value as something == compares as bitwise equality does: NaN equal to NaN, -0.0
    unequal to 0.0."""
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else (v, math.copysign(1.0, v))
    return v


def same_values(a, b) -> bool:
    """Equal type and values (Array.equals calls NaN unequal to NaN)."""
    return a.type == b.type and list(map(value_key, a.to_pylist())) == list(
        map(value_key, b.to_pylist())
    )


@pytest.mark.parametrize("values", NUMBERS, ids=lambda v: f"{v.dtype}-{v.size}")
def test_a_numeric_column_is_what_pa_array_makes(values):
    built = numeric_column(values)
    assert same_values(built, pa.array(values)) and built.null_count == 0


def test_other_dtypes_and_shapes_go_through_pa_array():
    values = np.array([1, 2], dtype=np.int32)
    assert numeric_column(values).type == pa.int32()
    with pytest.raises(pa.ArrowInvalid):
        numeric_column(np.zeros((2, 2)))


@pytest.mark.parametrize(
    "names, repeat",
    [(["loss", "norm/2", "ℓ1.75-divergence"], 3), (["", "a"], 2), (["x"], 0), ([], 5)],
)
def test_a_string_column_is_what_pa_array_makes_of_the_repeated_names(names, repeat):
    expected = pa.array([name for name in names for _ in range(repeat)], type=pa.string())
    built = string_column(names, repeat)
    assert built.equals(expected) and built.null_count == 0


def test_a_name_utf8_cannot_encode_is_refused_as_pyarrow_refuses_it():
    for make in (lambda: pa.array(["\ud800"] * 2), lambda: string_column(["\ud800"], 2)):
        with pytest.raises(UnicodeEncodeError):
            make()


@pytest.mark.parametrize(
    "value",
    [
        True,
        False,
        0,
        -7,
        2**63 - 1,
        -(2**63),
        2**63,
        0.25,
        math.inf,
        -math.inf,
        math.nan,
        "md-local",
        "ℓp",
        "",
        None,
        np.float64(2.5),
        np.int64(3),
        np.bool_(True),
    ],
    ids=repr,
)
@pytest.mark.parametrize("n", [0, 1, 9, 17])
def test_a_repeated_column_is_what_pa_repeat_of_pa_scalar_makes(value, n):
    def outcome(make):
        try:
            return make()
        except (OverflowError, pa.ArrowException) as err:  # (2**63: no Arrow int type)
            return type(err)

    built = outcome(lambda: repeated_column(value, n))
    expected = outcome(lambda: pa.repeat(pa.scalar(value), n))
    if isinstance(expected, type):
        assert built is expected
    else:
        assert same_values(built, expected) and len(built) == n


def test_column_numbers_read_the_buffers_of_chunks_slices_and_empty_columns():
    a = numeric_column(np.arange(10.0))
    chunked = pa.chunked_array([a.slice(3, 4), numeric_column(np.array([-1.0, np.nan])), a[:0]])
    for column in (a, a.slice(2, 5), chunked, pa.chunked_array([], type=pa.float64()), a[:0]):
        expected = column.to_numpy()
        got = column_numbers(column)
        assert got.dtype == expected.dtype and np.array_equal(got, expected, equal_nan=True)
    ints = pa.chunked_array([numeric_column(np.arange(5, dtype=np.int64)).slice(1)])
    assert column_numbers(ints).tolist() == [1, 2, 3, 4]


def test_a_one_chunk_column_is_read_as_a_read_only_view_as_to_numpy_gives_it():
    values = np.arange(4.0)
    column = pa.chunked_array([numeric_column(values)])
    got = column_numbers(column)
    assert not got.flags.writeable and not column.to_numpy().flags.writeable
    with pytest.raises(ValueError):
        got[0] = 9.0
    assert column.to_pylist() == [0.0, 1.0, 2.0, 3.0]


def test_masked_entries_become_nulls_as_pa_array_makes_them():
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False])
    assert numeric_column(masked).to_pylist() == pa.array(masked).to_pylist() == [1.0, None, 3.0]


@pytest.mark.parametrize("n", [1, 3, 8, 13])
def test_a_repeated_bool_column_has_pyarrow_s_bits_padding_included(n):
    built, expected = repeated_column(True, n), pa.repeat(pa.scalar(True), n)
    assert built.buffers()[1].to_pybytes() == expected.buffers()[1].to_pybytes()[: (n + 7) // 8]


def test_columns_with_nulls_or_other_types_are_read_by_to_numpy():
    with_null = pa.chunked_array([pa.array([1.0, None])])
    assert np.isnan(column_numbers(with_null)[1])
    assert column_numbers(pa.chunked_array([pa.array([1, 2], pa.int32())])).dtype == np.int32


def converters_table(steps, metrics) -> pa.Table:
    """The table `tidy` made before arrow_columns, by pyarrow's converters."""
    steps = np.asarray(steps, dtype=np.int64)
    names = [np.full(steps.shape, name, dtype=object) for name in metrics]
    values = [np.asarray(v, dtype=np.float64) for v in metrics.values()]
    return pa.table(
        {
            "step": np.tile(steps, len(names)),
            "metric": np.concatenate(names) if names else np.array([], dtype=object),
            "value": np.concatenate(values) if values else np.array([], dtype=np.float64),
        }
    )


@pytest.mark.parametrize(
    "steps, metrics",
    [
        ([0, 5, 10], {"loss": [1.0, 0.5, np.nan], "norm/2": [1, 2, 3], "ℓ3": [0.0, -0.0, 1e-300]}),
        ([], {}),
        ([], {"loss": [], "norm/2": []}),  # no rows: the metric column null-typed, as before
        ([7], {"loss": [2.0]}),
    ],
)
def test_tidy_makes_the_table_pyarrow_s_converters_made(steps, metrics):
    table, reference = tidy(steps, metrics), converters_table(steps, metrics)
    assert table.schema == reference.schema
    assert all(
        same_values(table[c].combine_chunks(), reference[c].combine_chunks())
        for c in table.column_names
    )


def test_tidy_refuses_a_metric_name_that_is_not_a_str():
    with pytest.raises(TypeError, match="metric names must be str"):
        tidy([0], {3: [1.0]})


def test_the_store_table_and_curves_agree_with_the_converters(tmp_path):
    store = ResultsStore(tmp_path)
    config = {"algorithm": {"name": "ngd", "lr": 0.5}, "seed": 3, "flag": True, "tag": "ℓ2",
              "none": None}  # fmt: skip
    key = store.save(config, tidy([0, 2], {"loss": [1.0, 0.5], "norm/2": [0.0, 2.0]}))
    record = store.load(key)
    table = store.table()
    expected = {
        "run": key,
        "status": "finished",
        "algorithm.name": "ngd",
        "algorithm.lr": 0.5,
        "seed": 3,
        "flag": True,
        "tag": "ℓ2",
    }  # (the config's None is no column)
    assert table.column_names == ["step", "metric", "value", *expected]
    for name, value in expected.items():  # each as pa.scalar types the config's own value
        assert same_values(table[name].combine_chunks(), pa.repeat(pa.scalar(value), 4))
    steps, loss = record_curve(record, "loss")
    assert steps.tolist() == [0, 2] and loss.tolist() == [1.0, 0.5]


def test_storing_a_run_and_reading_its_curves_imports_no_pandas(tmp_path):
    pytest.importorskip("pandas")  # (without it installed the check below proves nothing)
    code = (
        "import sys\n"
        "from attnbias.store import ResultsStore, tidy\n"
        "from attnbias.curves import record_curve\n"
        f"store = ResultsStore({str(tmp_path)!r})\n"
        "metrics = tidy([0, 1], {'loss': [1.0, 0.5]})\n"
        "key = store.save({'seed': 1, 'name': 'a', 'lr': 0.5}, metrics)\n"
        "store.table(); record_curve(store.load(key), 'loss')\n"
        "print('pandas' in sys.modules, flush=True)\n"
    )
    # (its exit status is not read: pyarrow can abort at the interpreter's exit after reading
    # a file, before and after this change alike; apache/arrow issue 34314)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
