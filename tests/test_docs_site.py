"""The documentation site renders its maths offline and shows the register's forest plots
(issue 33): every script and stylesheet it loads is a file in docs/, the maths extension is on,
and the committed reports link figures that exist."""

import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def site_config() -> dict:
    # mkdocs.yml may hold !!python/name tags; none are needed for what is checked here
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def test_the_site_loads_no_script_or_stylesheet_from_the_network():
    config = site_config()
    assets = [*config.get("extra_javascript", []), *config.get("extra_css", [])]
    assert any("katex" in a for a in assets)  # the maths renderer, vendored
    for asset in assets:
        assert "//" not in asset, f"{asset}: loaded from the network"
        assert (DOCS / asset).is_file(), f"{asset}: not in docs/"


def test_maths_is_marked_by_arithmatex_for_the_vendored_katex():
    extensions = site_config()["markdown_extensions"]
    arithmatex = [e["pymdownx.arithmatex"] for e in extensions
                  if isinstance(e, dict) and "pymdownx.arithmatex" in e]  # fmt: skip
    assert arithmatex == [{"generic": True}]  # \( \) and \[ \], what docs/js/math.js reads
    script = (DOCS / "js" / "math.js").read_text(encoding="utf-8")
    assert "katex.render" in script and ".arithmatex" in script


def test_every_font_the_katex_stylesheet_prefers_is_vendored():
    css = (DOCS / "vendor" / "katex" / "katex.min.css").read_text(encoding="utf-8")
    fonts = set(re.findall(r"url\((fonts/[^)]+\.woff2)\)", css))
    assert fonts
    assert [f for f in sorted(fonts) if not (DOCS / "vendor" / "katex" / f).is_file()] == []


def test_the_docs_extra_pins_the_maths_extension():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    docs = re.search(r"^docs = \[(.*?)\]", text, re.MULTILINE | re.DOTALL).group(1)
    assert re.search(r'"pymdown-extensions==[\d.]+"', docs)


@pytest.mark.parametrize(
    "page, figure", [("RESULTS.md", "results_forest.png"), ("CLAIMS.md", "claims_forest.png")]
)
def test_the_committed_reports_show_their_forest_plot(page, figure):
    text = (DOCS / page).read_text(encoding="utf-8")
    assert f"](figures/{figure})" in text
    assert (DOCS / "figures" / figure).read_bytes().startswith(b"\x89PNG")


def test_display_maths_is_closed_on_every_page():
    for page in DOCS.glob("*.md"):
        assert page.read_text(encoding="utf-8").count("$$") % 2 == 0, page.name
