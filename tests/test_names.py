"""The naming rule: a public type name means one thing in the whole product tree.

A public (no leading underscore) module-level class, or capitalised type alias (``Name = ...``,
``Name: TypeAlias = ...``; ALL_CAPS constants are values, not types), is defined in one module of
gateway/, channel/ and workers/ (the generated gateway/_pb aside). Two modules defining the same
name make a reader guess which one an import or a docstring means.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gateway", "channel", "workers")


def _defined(body: list[ast.stmt]) -> Iterator[str]:
    """The public type names a module body defines, module-level blocks (if / try) included."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and not target.id.isupper():
                    yield target.id
        elif isinstance(node, ast.If | ast.Try):
            for block in (node.body, node.orelse, getattr(node, "finalbody", [])):
                yield from _defined(block)
            for handler in getattr(node, "handlers", []):
                yield from _defined(handler.body)


def definitions(root: Path = ROOT) -> dict[str, list[str]]:
    """Each public type name of the product tree under ``root``, with the modules defining it."""
    where: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if root / "gateway" / "_pb" in path.parents:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            for name in dict.fromkeys(_defined(tree.body)):
                if name[0].isupper():
                    where[name].append(str(path.relative_to(root)))
    return where


def duplicates(where: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: modules for name, modules in where.items() if len(modules) > 1}


def test_each_public_type_name_is_defined_once() -> None:
    where = definitions()
    assert len(where) > 250  # the scan read the tree (over 300 names)
    assert duplicates(where) == {}


def test_the_scan_finds_a_duplicate(tmp_path: Path) -> None:
    """Two modules defining one class name, or one alias name, are caught; private and ALL_CAPS
    names are not type names."""
    (tmp_path / "gateway" / "a").mkdir(parents=True)
    (tmp_path / "gateway" / "_pb").mkdir()
    (tmp_path / "channel").mkdir()
    (tmp_path / "workers").mkdir()
    (tmp_path / "gateway" / "a" / "one.py").write_text(
        "class Twice: ...\nAlias = int\n_Private = 1\nLIMIT = 1\n"
    )
    (tmp_path / "channel" / "two.py").write_text(
        "from typing import TypeAlias\nif True:\n    class Twice: ...\n"
        "Alias: TypeAlias = str\n_Private = 2\nLIMIT = 2\n"
    )
    (tmp_path / "gateway" / "_pb" / "gen.py").write_text("class Twice: ...\n")
    (tmp_path / "workers" / "w.py").write_text("def f() -> None:\n    class Twice: ...\n")
    assert duplicates(definitions(tmp_path)) == {
        "Twice": ["gateway/a/one.py", "channel/two.py"],
        "Alias": ["gateway/a/one.py", "channel/two.py"],
    }
