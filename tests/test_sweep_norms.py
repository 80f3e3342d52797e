"""Runs of one batch structure but different Att-SVM norms are measured each against its own
norms, and a stored run measured against another's is trained again (local-global's NGD and
ℓ3-MD runs once shared batches measured by the first run's norm)."""

from __future__ import annotations

import hashlib
import json

import numpy as np

from attnbias.data import gaussian_unit
from attnbias.engine import Algorithm, RunSpec
from attnbias.engine.measure import measured_as_configured
from attnbias.engine.sweep import batches, run_sweep
from attnbias.store import ResultsStore


def spec(algorithm: Algorithm, p: float) -> RunSpec:
    rng = np.random.default_rng(3)
    problem = gaussian_unit(6, 8, 10, seed=3)
    return RunSpec({"p": p}, problem, algorithm, 60, {"W": rng.standard_normal((10, 10))},
                   norms=(p,), grid_points=8)  # fmt: skip


def pair() -> list[RunSpec]:
    return [spec(Algorithm("NGD", "ngd", 0.1), 2.0),
            spec(Algorithm("ℓ3-MD", "md", 0.1, p=3.0, normalize="per_tensor"), 3.0)]  # fmt: skip


def test_runs_of_different_norms_never_share_a_batch():
    ngd, md = pair()
    assert ngd.structure != md.structure
    assert batches([ngd, md], None) == [[0], [1]]


def test_each_run_is_measured_against_its_own_norms(tmp_path):
    records = run_sweep(pair(), ResultsStore(tmp_path), progress=False).records
    for record, label in zip(records, ("2", "3")):
        assert sorted(record.info["svm"]) == [label]
        assert f"divergence/{label}" in set(record.metrics["metric"].to_pylist())
        assert measured_as_configured(record)


def test_a_run_stored_against_another_runs_norms_is_trained_again(tmp_path, caplog):
    store = ResultsStore(tmp_path)
    ngd, md = pair()
    run_sweep([ngd, md], store, progress=False)
    info_path = tmp_path / "runs" / md.key / "info.json"
    info = json.loads(info_path.read_text())
    info["svm"] = {"2": info["svm"]["3"]}  # as the old mixed batch stored it
    forged = json.dumps(info).encode()
    manifest_path = tmp_path / "runs" / md.key / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["info.json"] = {"bytes": len(forged),
                                      "sha256": hashlib.sha256(forged).hexdigest()}  # fmt: skip
    info_path.write_bytes(forged)
    manifest_path.write_text(json.dumps(manifest))
    assert not measured_as_configured(store.load(md.key))
    report = run_sweep([ngd, md], store, progress=False)
    assert report.ran == 1 and report.skipped == 1
    assert "measured against another run's Att-SVM norms" in caplog.text
    assert sorted(report.records[1].info["svm"]) == ["3"]
    assert measured_as_configured(store.load(md.key))
