"""The documentation site covers the package: every public name is in the API reference, every
page is reachable.

Public names are each module's `__all__`, plus every `attnbias.…` name the prose pages, the
README and the examples tell users to use. The API reference (docs/api/*.md) is mkdocstrings
entries, `::: dotted.path`, each with optional `options:` indented below it. As mkdocstrings
renders them with mkdocs.yml's options (`show_if_no_docstring: false`): an object is shown only
if it or one of its members has a docstring (unless the entry sets `show_if_no_docstring: true`),
and a module entry shows the module's public members (its `__all__`, or else its names without
a leading underscore; `members: false` or a list narrows that). Everything is read from the
source (ast), so the check needs neither mkdocs nor the optional extras.
"""

from __future__ import annotations

import ast
import re
import textwrap
from functools import cache
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # mkdocs.yml and the entries' options

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
DOCS = ROOT / "docs"
# an entry and its indented options block
ENTRY = re.compile(r"^:::[ \t]*(\S+)[ \t]*\n((?:(?:[ \t]+\S.*)?\n)*)", re.MULTILINE)
# `attnbias.x.Name` in prose, and `from attnbias.x import A, B` in code blocks and examples
DOTTED = re.compile(r"`(attnbias(?:\.\w+)+)")
FROM_IMPORT = re.compile(r"^\s*from (attnbias(?:\.\w+)*) import ([\w, ()]+)$", re.MULTILINE)
MD_LINK = re.compile(r"\]\(([^)\s#]+\.md)(?:#[^)]*)?\)")


@cache
def module_path(module: str) -> Path | None:
    """The source file of a module of the package, or None if there is none."""
    base = SRC.joinpath(*module.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


@cache
def tree(module: str) -> ast.Module:
    return ast.parse(module_path(module).read_text(encoding="utf-8"))


def package_of(module: str) -> str:
    return module if module_path(module).name == "__init__.py" else module.rpartition(".")[0]


def absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an import statement of `module` imports from."""
    if node.level == 0:
        return node.module
    base = package_of(module).split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


@cache
def exported(module: str) -> tuple[str, ...] | None:
    """A module's `__all__`, or None if it has none."""
    for node in tree(module).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return tuple(ast.literal_eval(node.value))
    return None


def definition(module: str, name: str) -> tuple[str, ast.stmt | None]:
    """Where `module.name` is defined: ("pkg.sub", None) for a submodule, else the defining
    module and its statement (imports followed through the package)."""
    if module_path(f"{module}.{name}"):
        return f"{module}.{name}", None
    body = tree(module).body
    for k, node in enumerate(body):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == name:
                return module, node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                # an attribute's docstring is the string statement right after it
                following = body[k + 1] if k + 1 < len(body) else None
                return module, (node, following)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    source = absolute(module, node)
                    if source.split(".")[0] != "attnbias":
                        return source, None  # not ours: nothing to document
                    return definition(source, alias.name)
    raise LookupError(f"{module} has no top-level name {name!r}")


def docstring_of_attribute(body: list[ast.stmt], k: int) -> bool:
    """Whether statement k (an assignment) is followed by its docstring."""
    following = body[k + 1] if k + 1 < len(body) else None
    return (
        isinstance(following, ast.Expr)
        and isinstance(following.value, ast.Constant)
        and isinstance(following.value.value, str)
    )


def has_docstrings(node: ast.ClassDef) -> bool:
    """mkdocstrings shows a class without a docstring when one of its members has one."""
    if ast.get_docstring(node):
        return True
    for k, member in enumerate(node.body):
        if isinstance(member, ast.ClassDef) and has_docstrings(member):
            return True
        if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(
            member
        ):
            return True
        if isinstance(member, (ast.Assign, ast.AnnAssign)) and docstring_of_attribute(node.body, k):
            return True
    return False


def has_docstring(module: str, node) -> bool:
    if node is None:  # a module
        return bool(module_path(module) and ast.get_docstring(tree(module)))
    if isinstance(node, tuple):  # an attribute and the statement after it
        return docstring_of_attribute(list(node), 0)
    if isinstance(node, ast.ClassDef):
        return has_docstrings(node)
    return bool(ast.get_docstring(node))


def shows(module: str, name: str) -> bool:
    """Whether an entry `::: module` lists `name` among the module's members."""
    members = options(module).get("members", True)
    if members is False:
        return False
    if isinstance(members, list):
        return name in members
    names = exported(module)
    return name in names if names is not None else not name.startswith("_")


@cache
def entries() -> dict[str, dict]:
    """Every mkdocstrings entry of the API reference: target → {"page", "options"}."""
    found = {}
    for page in sorted((DOCS / "api").glob("*.md")):
        text = page.read_text(encoding="utf-8") + "\n"  # an entry on the last line too
        for target, block in ENTRY.findall(text):
            config = yaml.safe_load(textwrap.dedent(block)) if block.strip() else None
            found[target] = {"page": page.name, "options": (config or {}).get("options", {})}
    return found


def options(target: str) -> dict:
    return entries()[target]["options"] if target in entries() else {}


def documented(module: str, name: str) -> str | None:
    """None if the reference shows `module.name`, else why not."""
    where, node = definition(module, name)
    if where.split(".")[0] != "attnbias":
        return f"re-exported from {where}, which is not part of attnbias"
    if node is None:  # a submodule: documented by its own entry
        return None if where in entries() else f"no `::: {where}` entry"
    showing = [t for t in (f"{module}.{name}", f"{where}.{name}") if t in entries()]
    showing += [t for t in dict.fromkeys((module, where)) if t in entries() and shows(t, name)]
    if not showing:
        return f"no entry shows it (`::: {where}` or `::: {module}.{name}`)"
    if has_docstring(where, node) or any(options(t).get("show_if_no_docstring") for t in showing):
        return None
    return (
        f"{where}.{name} has no docstring, so `::: {showing[0]}` leaves it out "
        "(give it one, or the entry `show_if_no_docstring: true`)"
    )


def modules() -> list[str]:
    """Every module of the package that is not private (no part starting with _)."""
    names = []
    for path in sorted((SRC / "attnbias").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts):
            names.append(".".join(parts))
    return names


def all_names() -> list[tuple[str, str]]:
    return [(m, n) for m in modules() for n in exported(m) or ()]


def split_dotted(dotted: str) -> tuple[str, str | None]:
    """`attnbias.a.b.Name.method` → ("attnbias.a.b", "Name"); a module alone → (module, None)."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        if module_path(".".join(parts[:k])):
            rest = parts[k:]
            return ".".join(parts[:k]), (rest[0] if rest else None)
    raise LookupError(f"{dotted}: no such module in src/attnbias")


def user_pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted(ROOT.glob("examples/*.py"))]
    return [p for p in pages if p.is_file()]


def names_users_are_told_to_use() -> list[tuple[str, str, str | None]]:
    """(page, module, name or None) for each `attnbias.…` reference and import in user pages."""
    found = set()
    for page in user_pages():
        text = page.read_text(encoding="utf-8")
        for dotted in DOTTED.findall(text):
            found.add((page.name, *split_dotted(dotted)))
        for module, names in FROM_IMPORT.findall(text):
            for name in re.split(r"[\s,()]+", names):
                if name:
                    found.add((page.name, module, name))
    return sorted(found, key=lambda f: (f[0], f[1], f[2] or ""))


@pytest.mark.parametrize("module, name", all_names(), ids=lambda x: x)
def test_every_name_in_all_is_in_the_api_reference(module, name):
    assert documented(module, name) is None, f"{module}.{name}: {documented(module, name)}"


@pytest.mark.parametrize("page, module, name", names_users_are_told_to_use(), ids=lambda x: str(x))
def test_every_name_the_docs_use_is_in_the_api_reference(page, module, name):
    if name is None or module_path(f"{module}.{name}"):
        target = module if name is None else f"{module}.{name}"
        assert target in entries(), f"{page} names {target}: no `::: {target}` entry"
    else:
        reason = documented(module, name)
        assert reason is None, f"{page} names {module}.{name}: {reason}"


def test_every_reference_entry_names_something_that_exists():
    for target, entry in entries().items():
        assert target.startswith("attnbias."), (entry["page"], target)
        module, name = split_dotted(target)
        if name is not None:
            definition(module, name)  # raises LookupError naming it
        for member in entry["options"].get("members") or []:
            definition(target, member)


def test_the_checks_catch_a_missing_name():
    """The checks can fail: a name taken out of the reference is reported."""
    assert documented("attnbias.optim", "SignGD") is None
    saved = dict(entries())
    try:
        for target in [t for t in entries() if t.startswith("attnbias.optim")]:
            del entries()[target]
        assert "no entry shows it" in documented("attnbias.optim", "SignGD")
        assert "no `::: attnbias.optim.functional` entry" in documented(
            "attnbias.optim", "functional"
        )
    finally:
        entries().clear()
        entries().update(saved)


def nav_pages(nav) -> list[str]:
    """The page files of mkdocs.yml's nav (nested lists of {title: page or list})."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in nav_pages(value)]
    return [p for item in nav for p in nav_pages(item)]


def test_every_docs_page_is_linked_from_the_index_and_in_the_navigation():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = set(nav_pages(config["nav"]))
    linked = set(MD_LINK.findall((DOCS / "index.md").read_text(encoding="utf-8")))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    unlinked = pages - {"index.md"} - linked
    assert not unlinked, f"not linked from docs/index.md: {sorted(unlinked)}"
    assert pages <= in_nav, f"not in mkdocs.yml nav: {sorted(pages - in_nav)}"
    assert in_nav <= pages, f"mkdocs.yml nav names missing pages: {sorted(in_nav - pages)}"


def test_links_stay_inside_the_site_and_the_clone():
    """docs/ pages may link only within docs/ (the site holds nothing else), the README only
    within the clone; no page names the workspace (../shared, /work/)."""
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        text = page.read_text(encoding="utf-8")
        assert "../shared" not in text and "/work/" not in text, page
        inside = ROOT if page.parent == ROOT else DOCS
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            resolved = (page.parent / target.split("#")[0]).resolve()
            where = page.relative_to(ROOT)
            assert resolved.is_relative_to(inside), f"{where} links outside {inside.name}: {target}"
            assert resolved.exists(), f"{where} links to a missing file: {target}"


def test_the_optimiser_page_names_every_optimiser_with_arguments_it_takes():
    """docs/OPTIMIZERS.md's table: one row per optimiser class, naming only real arguments."""
    import inspect

    import attnbias.optim

    text = (DOCS / "OPTIMIZERS.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)\(([^)]*)\)` \|", text, re.MULTILINE))
    classes = {n for n in attnbias.optim.__all__ if inspect.isclass(getattr(attnbias.optim, n))}
    assert set(rows) == classes
    for name, arguments in rows.items():
        takes = inspect.signature(getattr(attnbias.optim, name)).parameters
        for argument in (a.strip() for a in arguments.split(",")):
            assert argument in takes, f"OPTIMIZERS.md: {name} has no argument {argument!r}"
