"""`attnbias claims` prints only summaries in the shape attnbias writes (issue 28, SECURITY.md):
a summary forged together with its manifest, whose claim has a status the library never gives or
a field of another type, is one line naming the experiment's summary and the field, exit 2; and a
`latest` that is not the store's link is named, not read as "no summary"."""

import copy
import json

import pytest

from attnbias.cli import main
from attnbias.judging.claims import check_stored
from test_results_root_links import SUMMARY, one_error_line, published

pytestmark = pytest.mark.usefixtures("one_thread")

LEAF = {
    "id": "md-joint/x",
    "claim": "made",
    "status": "supported",
    "rule": {"quantity": "q", "comparison": ">", "threshold": 1.0, "source": "ours"},
    "effect": {"estimate": 2.0, "low": 1.5, "high": 2.5, "n": 5, "method": "t", "unit": "seeds"},
}


def forged(path: tuple, value) -> dict:
    """SUMMARY's shape with one compound claim, field `path` of it set to value."""
    claim = {"id": "md-joint/x", "claim": "made", "status": "supported", "parts": [LEAF]}
    claim = copy.deepcopy(claim)
    node = claim
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return {"claims": [claim]}


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("status",), "bogus", "status"),
        (("parts", 0, "status"), "bogus", "claims[0].parts[0]: status"),
        (("status",), ["supported"], "status"),
        (("id",), 7, "id"),
        (("parts", 0, "rule", "threshold"), "1", "claims[0].parts[0].rule: threshold"),
        (("parts", 0, "effect", "n"), 2.5, "effect: n"),
        (("parts", 0, "effect", "estimate"), True, "effect: estimate"),
        (("parts", 0, "unmet"), "late", "unmet"),
        (("parts",), {"a": 1}, "parts"),
    ],
)
def test_claims_refuses_a_forged_summary_naming_the_experiment_and_field(
    tmp_path, capsys, path, value, field
):
    root = tmp_path / "res"
    published(root, "md-joint", forged(path, value))  # forged with its manifest: it matches
    assert main(["claims", "--out", str(root)]) == 2
    line = one_error_line(capsys)
    assert str(root / "md-joint" / "summary.json") in line and field in line, line
    assert "bogus" not in capsys.readouterr().out


def test_the_summaries_attnbias_writes_pass_and_print():
    check_stored(SUMMARY["claims"][0])
    check_stored(forged(("status",), "not supported")["claims"][0])
    check_stored({"id": "old/x", "supported": None})  # from before claims stored a status
    with pytest.raises(ValueError, match="supported"):
        check_stored({"id": "old/x", "supported": 1})


def test_a_forged_summary_with_a_bogus_status_is_not_printed_as_a_verdict(tmp_path, capsys):
    root = tmp_path / "res"
    summary = {"claims": [{**SUMMARY["claims"][0], "status": "bogus"}]}
    published(root, "md-joint", summary)
    assert main(["claims", "--out", str(root), "--format", "json"]) == 2
    assert "status is 'bogus'" in one_error_line(capsys)


@pytest.mark.parametrize("planted", ["file", "directory"])
def test_claims_names_a_latest_that_is_not_the_stores_link(tmp_path, capsys, planted):
    root = tmp_path / "res"
    published(root, "md-joint", SUMMARY)
    latest = root / "md-joint" / "latest"
    target = latest.resolve()
    latest.unlink()
    if planted == "file":
        latest.write_text(json.dumps(SUMMARY))
    else:
        latest.mkdir()
        (latest / "summary.json").write_text((target / "summary.json").read_text())
    assert main(["claims", "--out", str(root)]) == 2
    line = one_error_line(capsys)
    assert f"{latest} is not a symbolic link" in line and "holds no" not in line, line
