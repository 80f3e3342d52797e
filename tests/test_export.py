"""Outputs other tools read: `attnbias export NAME --format csv` (a publication's metrics table
as CSV, the numbers exactly those of its Parquet file) and `attnbias svm --json` (the result as
JSON on stdout, the memory estimate on stderr)."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from attnbias import store
from attnbias.cli import main
from attnbias.data import gaussian_unit
from attnbias.experiment_registry import load_config
from attnbias.experiments.base import run_experiment
from attnbias.store import ResultsStore
from attnbias.svm import att_svm, selected_tokens

pytestmark = pytest.mark.usefixtures("one_thread")


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnbias: error: "), captured.err
    return lines[0]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A results root with a published ngd-fixed (tiny)."""
    root = tmp_path_factory.mktemp("results")
    run_experiment(load_config("ngd-fixed", quick=True, overrides={"seeds": 1, "steps": 40}),
                   root / "ngd-fixed")  # fmt: skip
    return root


def exported(text: bytes):
    return pcsv.read_csv(io.BytesIO(text))


@pytest.mark.slow
def test_export_writes_the_metrics_table_as_csv(root, capsysbinary):
    assert main(["export", "ngd-fixed", "--out", str(root), "--format", "csv"]) == 0
    table = exported(capsysbinary.readouterr().out)
    parquet = pq.read_table(root / "ngd-fixed" / "metrics.parquet")
    assert table.column_names == parquet.column_names
    assert table.num_rows == parquet.num_rows > 0
    for name in ("step", "value", "run", "metric"):
        assert table.column(name).to_pylist() == parquet.column(name).to_pylist()  # exact


@pytest.mark.slow
def test_export_write_replaces_only_with_force(root, tmp_path, capsys):
    path = tmp_path / "ngd.csv"
    assert main(["export", "ngd-fixed", "--out", str(root), "--write", str(path)]) == 0
    first = path.read_bytes()
    rows = pq.read_metadata(root / "ngd-fixed" / "metrics.parquet").num_rows
    assert exported(first).num_rows == rows
    capsys.readouterr()
    assert main(["export", "ngd-fixed", "--out", str(root), "--write", str(path)]) == 2
    assert "--force replaces it" in one_error_line(capsys)
    path.write_text("mine")
    args = ["export", "ngd-fixed", "--out", str(root), "--write", str(path), "--force"]
    assert main(args) == 0
    assert path.read_bytes() == first


@pytest.mark.slow
def test_export_refuses_a_table_that_does_not_match_its_manifest(root, tmp_path, capsys):
    """The store's check: an edited metrics.parquet is not exported (one line, exit 2)."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    table = (copy / "ngd-fixed" / "latest").resolve() / "metrics.parquet"
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 1
    table.write_bytes(bytes(data))
    assert main(["export", "ngd-fixed", "--out", str(copy)]) == 2
    assert "metrics.parquet" in one_error_line(capsys)


def test_export_without_results_says_how_to_make_them(tmp_path, capsys):
    assert main(["export", "md-local", "--out", str(tmp_path)]) == 2
    line = one_error_line(capsys)
    assert f"attnbias reproduce md-local --out {tmp_path}" in line, line


def publish_metrics(root, data: bytes) -> None:
    """A publication of md-local under root whose metrics.parquet holds `data` (its manifest
    matches: what a co-user with write access to the root can forge)."""
    results = ResultsStore(root / "md-local")
    stage = results.staging()
    (stage / "summary.json").write_text('{"claims": []}')
    (stage / "metrics.parquet").write_bytes(data)
    results.publish(stage, "0123456789abcdef", runs=[])


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_export_reads_the_table_with_the_stores_bounded_reader(tmp_path, monkeypatch, capsys):
    """Its bound, its message: the text columns' decoded size counts too (no second check)."""
    table = pa.table({"run": ["r" * 64] * 100, "value": [1.0] * 100})
    publish_metrics(tmp_path, parquet_bytes(table))
    assert main(["export", "md-local", "--out", str(tmp_path)]) == 0
    assert exported(capsys.readouterr().out.encode()).num_rows == 100
    bounded = store.read_parquet
    monkeypatch.setattr(store, "read_parquet", lambda f, shown: bounded(f, shown, limit=4000))
    assert main(["export", "md-local", "--out", str(tmp_path)]) == 2
    line = one_error_line(capsys)
    assert "metrics.parquet: its table takes" in line and "more than the 4,000 read" in line


def test_export_refuses_a_published_file_that_is_not_parquet_in_one_line(tmp_path, capsys):
    publish_metrics(tmp_path, b"PAR1 not a table PAR1")
    assert main(["export", "md-local", "--out", str(tmp_path)]) == 2
    assert "metrics.parquet is not a Parquet table" in one_error_line(capsys)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["export", "no-such"], "unknown experiment 'no-such'"),
        (["export", "md-local", "--force"], "--force: only with --write"),
    ],
)
def test_export_refuses_bad_arguments_in_one_line(args, says, capsys):
    assert main(args) == 2
    assert says in one_error_line(capsys)


def test_export_refuses_a_format_it_does_not_write(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["export", "md-local", "--format", "xlsx"])
    assert exit_.value.code == 2
    assert "--format: invalid choice: 'xlsx'" in capsys.readouterr().err


# --- svm --json ------------------------------------------------------------------------------


def problem(tmp_path):
    P = gaussian_unit(4, 5, 6, seed=1)
    W = np.random.default_rng(0).standard_normal((6, 6))
    np.savez(tmp_path / "p.npz", X=P.X, z=P.z, W=W)
    return P, W


def test_svm_json_is_the_result_on_stdout_and_notes_on_stderr(tmp_path, capsys):
    P, W = problem(tmp_path)
    written = tmp_path / "sol.npz"
    args = ["svm", str(tmp_path / "p.npz"), "--norm", "nuc", "--json", "--write", str(written)]
    assert main(args) == 0
    captured = capsys.readouterr()
    found = json.loads(captured.out)  # stdout is JSON and nothing else
    assert "memory     about " in captured.err
    alpha = selected_tokens(W, P.X, P.z)
    direct = att_svm(P.X, P.z, alpha, "nuc")
    assert found["status"] == direct.status
    assert found["W_norm"] == pytest.approx(direct.norm, rel=1e-6)
    assert found["margin"] == pytest.approx(direct.margin, rel=1e-6)
    assert found["alpha"] == np.asarray(alpha).tolist()
    assert np.allclose(np.array(found["W"]), direct.W, atol=1e-6)
    assert found["norm"] == "nuc" and found["norm_meaning"].startswith("nuclear")
    assert found["kkt_residual"] < 1e-6
    assert found["written"] == str(written) and np.load(written)["W"].shape == (6, 6)


def test_svm_text_output_is_unchanged(tmp_path, capsys):
    problem(tmp_path)
    assert main(["svm", str(tmp_path / "p.npz")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("memory     about ") and "status     optimal" in out
