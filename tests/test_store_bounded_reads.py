"""The store's own reads of files a co-user may have forged together with their manifests
(issue 28; docs/SECURITY.md): a run's config.json and info.json, a manifest and a published
summary.json are bounded in size and in JSON nesting before they are parsed, and a run's
metrics.parquet in its decoded size before it is read into memory; each refusal is one line."""

import io
import json
import logging
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attnbias import store as store_module
from attnbias.experiments import base
from attnbias.store import (
    MANIFEST,
    MAX_JSON_NESTING,
    MAX_METRICS_BYTES,
    DamagedRun,
    ResultsStore,
    read_parquet,
    tidy,
    write_manifest,
)

DEEP = 100_000  # json's parser recurses once a level: past Python's limit


def deep_json(levels: int = DEEP) -> bytes:
    return b'{"a": ' + b"[" * levels + b"]" * levels + b"}"


def stored_run(tmp_path: Path) -> tuple[ResultsStore, str, Path]:
    store = ResultsStore(tmp_path / "exp")
    key = store.save({"a": 1}, tidy([0, 1], {"loss": [1.0, 0.5]}), info={"seconds": 1.0})
    return store, key, store.runs / key


def forge(run: Path, key: str, name: str, data: bytes) -> None:
    """File `name` of a stored run replaced by `data`, its manifest made to match."""
    (run / name).write_bytes(data)
    write_manifest(run, key=key, status="finished")


@pytest.mark.parametrize("name", ["config.json", "info.json"])
def test_a_run_json_nested_too_deep_is_a_damaged_run_not_a_recursion_error(tmp_path, name):
    store, key, run = stored_run(tmp_path)
    forge(run, key, name, deep_json())
    assert store.problem(key) is None  # it matches its (forged) manifest
    with pytest.raises(DamagedRun, match=f"{name} nests {DEEP + 1} levels deep") as refused:
        store.load(key)
    assert "\n" not in str(refused.value)
    # as deep as the bound allows still reads (a config, stored under its own hash)
    if name == "config.json":
        key = store.save(json.loads(deep_json(MAX_JSON_NESTING - 1)))
    else:
        forge(run, key, name, deep_json(MAX_JSON_NESTING - 1))
    record = store.load(key)
    assert "a" in (record.info if name == "info.json" else record.config)


def test_a_run_json_larger_than_its_bound_is_not_read(tmp_path, monkeypatch):
    store, key, run = stored_run(tmp_path)
    monkeypatch.setattr(store_module, "MAX_JSON_BYTES", 1000)
    forge(run, key, "info.json", b'{"pad": "' + b" " * 2000 + b'"}')
    with pytest.raises(DamagedRun, match=r"info\.json has 2011 bytes, more than the 1000 read"):
        store.load(key)


def test_a_manifest_nested_too_deep_is_a_problem_not_a_recursion_error(tmp_path, caplog):
    store, key, run = stored_run(tmp_path)
    (run / MANIFEST).write_bytes(deep_json())
    assert f"nests {DEEP + 1} levels deep" in store.problem(key)
    assert store.heal([key]) == [key] and not store.has(key)  # reported, trained again
    # a publication's manifest: said, and the outputs made again
    stage = store.staging()
    store.publish(stage, "0123456789abcdef")
    (store.directory / "outputs" / "0123456789abcdef" / MANIFEST).write_bytes(deep_json())
    with caplog.at_level(logging.WARNING, logger="attnbias.store"):
        assert store.published() is None
    assert "levels deep" in caplog.text


def test_a_reused_summary_nested_too_deep_is_refused_before_it_is_parsed(tmp_path):
    with pytest.raises(ValueError, match=f"nests {DEEP + 1} levels deep") as refused:
        base.read_summary(deep_json(), tmp_path / "summary.json")
    assert "RecursionError" not in str(refused.value) and "\n" not in str(refused.value)


# --- metrics.parquet: its decoded size bounded before it is read ---------------------------------


def zeros_parquet(rows_per_group: int, groups: int) -> bytes:
    """A Parquet file of int64 zeros: run-length encoded, a few bytes a row group."""
    sink = io.BytesIO()
    group = pa.table({"step": pa.array(np.zeros(rows_per_group, dtype=np.int64))})
    with pq.ParquetWriter(sink, group.schema, compression="zstd") as writer:
        for _ in range(groups):
            writer.write_table(group)
    return sink.getvalue()


def refused_unread(tmp_path: Path, data: bytes) -> None:
    store, key, run = stored_run(tmp_path)
    forge(run, key, "metrics.parquet", data)
    with pytest.raises(DamagedRun, match=r"metrics\.parquet: its metadata gives [\d,]+ bytes"):
        store.load(key)


def test_a_small_parquet_whose_table_decodes_past_the_bound_is_refused_unread(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(store_module, "MAX_METRICS_BYTES", 10**7)
    data = zeros_parquet(2**20, 2)  # 16.8 MB decoded, from about 10 kB
    assert len(data) < 10**5
    refused_unread(tmp_path, data)


@pytest.mark.slow
def test_a_one_megabyte_parquet_of_two_gigabytes_decoded_is_refused_unread(tmp_path):
    data = zeros_parquet(2**20, MAX_METRICS_BYTES // 8 // 2**20 + 1)  # 2.005 GB decoded
    assert len(data) < 2 * 10**6
    refused_unread(tmp_path, data)


def test_text_that_decodes_far_larger_than_its_dictionary_is_refused(tmp_path, monkeypatch):
    # one 10 kB metric name, 2,000 rows: a file of some kB, 20 MB as the dense column
    name = "m" * 10_000
    table = tidy(np.arange(2000), {name: np.zeros(2000)})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    assert len(sink.getvalue()) < 10**5
    monkeypatch.setattr(store_module, "MAX_METRICS_BYTES", 10**6)  # its metadata: < 100 kB
    store, key, run = stored_run(tmp_path)
    forge(run, key, "metrics.parquet", sink.getvalue())
    with pytest.raises(DamagedRun, match=r"its table takes [\d,]+ bytes decoded, more than"):
        store.load(key)
    # within the bound, the same table reads as it was written
    monkeypatch.setattr(store_module, "MAX_METRICS_BYTES", 10**9)
    assert store.load(key).metrics.equals(table)


def test_read_parquet_keeps_the_written_types(tmp_path):
    table = tidy([0, 5], {"loss": [1.0, 0.5], "norm": [2.0, 3.0]})
    table = table.append_column("flag", pa.array([True, False, True, False]))
    sink = io.BytesIO()
    pq.write_table(table, sink)
    read = read_parquet(io.BytesIO(sink.getvalue()), tmp_path / "m.parquet")
    assert read.equals(table) and read.schema == table.schema
    with pytest.raises(ValueError, match=r"m\.parquet: its metadata gives [\d,]+ bytes"):
        read_parquet(io.BytesIO(sink.getvalue()), tmp_path / "m.parquet", limit=10)
