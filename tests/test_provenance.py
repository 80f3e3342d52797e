"""Provenance in every output: each run's info.json and each publication's manifest.json say
which Python, torch, numpy, scipy and cvxpy made them, on which platform, with how many threads
and on which devices; `attnbias --version --verbose` prints the same."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import sys

import pytest
import torch

from attnbias import __version__, provenance
from attnbias.cli import main
from attnbias.experiment_registry import load_config
from attnbias.experiments.base import run_experiment
from attnbias.store import MANIFEST

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = {"seeds": 1, "steps": 40}


def assert_provenance(found: dict) -> None:
    """Every field, with this process's values where they are fixed."""
    assert found["python"] == f"{platform.python_implementation()} {platform.python_version()}"
    for name in ("torch", "numpy", "scipy", "cvxpy"):
        assert found["packages"][name] == importlib.metadata.version(name)
    assert found["platform"] == platform.platform()
    assert found["cpu"]["count"] >= 1 and found["cpu"]["model"]
    threads = found["threads"]
    assert threads["torch"] >= 1 and threads["torch_interop"] >= 1
    assert threads["native"], "threadpoolctl finds numpy's BLAS"
    assert all(lib["num_threads"] >= 1 and "/" in lib["library"] for lib in threads["native"])
    assert found["devices"]["torch_cuda"] == torch.version.cuda
    assert isinstance(found["devices"]["cuda_in_use"], list)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    out = tmp_path_factory.mktemp("ngd-fixed")
    run_experiment(load_config("ngd-fixed", quick=True, overrides=TINY), out)
    return out


@pytest.mark.slow
def test_every_run_info_records_its_provenance(published):
    infos = sorted((published / "runs").glob("*/info.json"))
    assert infos
    for path in infos:
        assert_provenance(json.loads(path.read_text())["provenance"])


@pytest.mark.slow
def test_the_summary_manifest_records_its_provenance(published):
    manifest = json.loads((published / "latest" / MANIFEST).read_text())
    assert_provenance(manifest["provenance"])
    assert manifest["files"]["summary.json"]["bytes"] > 0  # the manifest of the summary


def test_the_thread_counts_are_those_in_effect():
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert provenance.environment()["threads"]["torch"] == 1
    finally:
        torch.set_num_threads(threads)


def test_the_native_thread_counts_are_those_in_effect():
    from threadpoolctl import threadpool_info, threadpool_limits

    provenance.environment()  # the libraries found before the limit
    with threadpool_limits(1, user_api="blas"):
        limited = provenance.environment()["threads"]["native"]
        assert [lib["num_threads"] for lib in limited] == [
            lib["num_threads"] for lib in threadpool_info()
        ]
    after = provenance.environment()["threads"]["native"]
    assert [lib["num_threads"] for lib in after] == [
        lib["num_threads"] for lib in threadpool_info()
    ]


def test_the_native_libraries_are_looked_for_again_only_after_an_import(monkeypatch):
    import types

    import threadpoolctl

    made = []

    class Counted(threadpoolctl.ThreadpoolController):
        def __init__(self):
            made.append(1)
            super().__init__()

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Counted)
    provenance.native_pools.cache_clear()
    for _ in range(3):
        provenance.threads()
    assert len(made) == 1  # one search for the libraries, not one per stored run
    monkeypatch.setitem(sys.modules, "attnbias_test_new_module", types.ModuleType("new"))
    provenance.threads()
    assert len(made) == 2  # a module imported since may have brought a library
    provenance.native_pools.cache_clear()


def test_no_file_path_of_the_user_is_stored():
    text = json.dumps(provenance.environment())
    assert "site-packages" not in text and "/home/" not in text and "/root/" not in text


@pytest.mark.parametrize("flags", [["--version", "--verbose"], ["-v", "--version"]])
def test_version_verbose_prints_the_provenance(flags, capsys):
    assert main(flags) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert lines["attnbias"].startswith(f"attnbias {__version__}")
    assert lines["python"].endswith(platform.python_version())
    for name in ("torch", "numpy", "scipy", "cvxpy"):
        assert lines[name].split()[1] == importlib.metadata.version(name)
    assert platform.platform() in lines["platform"]
    assert f"torch {torch.get_num_threads()}" in lines["threads"]
    assert "openblas" in lines["threads"] or "mkl" in lines["threads"]
    cuda = lines["devices"].split()[1] == "CUDA"
    assert cuda == (torch.version.cuda is not None)


def test_version_alone_prints_only_the_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"attnbias {__version__}"
