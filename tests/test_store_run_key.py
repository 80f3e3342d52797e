"""A run is stored under its config's hash (store.config_key), and load checks it (issue 28): a
run's config.json forged together with its manifest was loaded as the run of its key, and
md-local ended in KeyError: 'init', a traceback; now it is a DamagedRun, one line."""

import json

import pytest

from attnbias.store import DamagedRun, ResultsStore, config_key, tidy, write_manifest


def test_a_run_whose_config_is_forged_with_its_manifest_is_damaged(tmp_path):
    store = ResultsStore(tmp_path / "md-local")
    config = {"seed": 1, "init": "normal", "p": 2.0}
    key = store.save(config, metrics=tidy([0, 1], {"loss": [1.0, 0.5]}))
    assert key == config_key(config) and store.load(key).config == config
    run = store.runs / key
    forged = {"seed": 1, "p": 2.0}  # 'init' gone
    (run / "config.json").write_text(json.dumps(forged))
    write_manifest(run, key=key, status="finished")
    assert store.problem(key) is None  # it matches its (forged) manifest
    with pytest.raises(DamagedRun, match=f"hashes to {config_key(forged)}, not to its key"):
        store.load(key)
    with pytest.raises(DamagedRun):  # the experiment's table reads it through load too
        store.table()
