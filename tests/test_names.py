"""The naming rule: a public type or function name means one thing in the whole product tree.

A public (no leading underscore) module-level class, or capitalised type alias (``Name = ...``,
``Name: TypeAlias = ...``; ALL_CAPS constants are values, not types), is defined in one module of
gateway/, channel/ and workers/ (the generated gateway/_pb aside). Two modules defining the same
name make a reader guess which one an import or a docstring means.

A public module-level function name is defined in one module too, unless the modules defining it
are alternatives that play one part (:data:`ONE_PART`): each model runtime's ``load``, each object
store's ``classify``, each protocol's mirror of the other's module. Any other pair is two meanings
under one name, and one of them is renamed (or the two folded, when they are the same thing).
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


def _functions(body: list[ast.stmt]) -> Iterator[str]:
    """The public function names a module body defines, module-level blocks (if / try) included
    (an ``@overload`` set is one name)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not node.name.startswith("_"):
                yield node.name
        elif isinstance(node, ast.If | ast.Try):
            for block in (node.body, node.orelse, getattr(node, "finalbody", [])):
                yield from _functions(block)
            for handler in getattr(node, "handlers", []):
                yield from _functions(handler.body)


def function_definitions(root: Path = ROOT) -> dict[str, list[str]]:
    """Each public module-level function name of the product tree under ``root``, with the
    modules defining it."""
    where: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if root / "gateway" / "_pb" in path.parents:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            for name in dict.fromkeys(_functions(tree.body)):
                where[name].append(str(path.relative_to(root)))
    return where


_TFS, _V2 = "gateway/tfserving", "gateway/v2"

ONE_PART: dict[str, tuple[str, ...]] = {
    # Alternatives behind one interface: a caller picks the module, then calls the name.
    "load": (  # a model runtime's loader (workers/models.py picks one by platform)
        "workers/backends/onnx.py",
        "workers/backends/openvino.py",
        "workers/backends/tensorflow.py",
    ),
    "classify": (  # an object store's failure: its kind and a reason quoting no request
        "gateway/storage/azure_blob.py",
        "gateway/storage/gcs.py",
        "gateway/storage/s3.py",
    ),
    "main": (  # a command's entry point: its arguments → its exit status
        "gateway/client/cli.py",
        "gateway/frontend/bootstrap.py",
        "gateway/main.py",
        "workers/bootstrap.py",
    ),
    # The two protocol packages mirror each other: the same part, each for its own protocol.
    "document": (f"{_TFS}/rest/openapi.py", f"{_V2}/rest/openapi.py"),  # its OpenAPI document
    "is_api_path": (f"{_TFS}/rest/paths.py", f"{_V2}/rest/paths.py"),  # a path of its REST API
    "parse": (f"{_TFS}/rest/paths.py", f"{_V2}/rest/paths.py"),  # its REST request line
    "to_array": (f"{_TFS}/rest/json_values.py", f"{_V2}/rest/json_values.py"),  # JSON → array
    "read_off_loop": (f"{_TFS}/rest/json_request.py", f"{_V2}/rest/request_body.py"),  # big body
    "lookup": (f"{_TFS}/codec/tensor_types.py", f"{_V2}/datatypes.py"),  # its dtype name's row
    "for_numpy": (f"{_TFS}/codec/tensor_types.py", f"{_V2}/datatypes.py"),  # a numpy dtype's row
}
"""Function names that several modules define for one part, and exactly those modules."""


def two_meanings(
    where: dict[str, list[str]], one_part: dict[str, tuple[str, ...]] = ONE_PART
) -> dict[str, list[str]]:
    """The function names defined in several modules, but those playing one part in exactly
    the modules listed for it."""
    return {
        name: modules
        for name, modules in duplicates(where).items()
        if sorted(modules) != sorted(one_part.get(name, ()))
    }


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


def test_each_public_function_name_means_one_thing() -> None:
    where = function_definitions()
    assert len(where) > 300  # the scan read the tree (over 400 names)
    assert two_meanings(where) == {}
    assert {name: sorted(where[name]) for name in ONE_PART} == {
        name: sorted(modules) for name, modules in ONE_PART.items()
    }  # every listed part is still played, by those modules only


def test_the_scan_finds_a_function_name_with_two_meanings(tmp_path: Path) -> None:
    """Two modules defining one public function (a module-level block's too) are caught; a
    part played by exactly its listed modules is not, but a third module joining it is; an
    ``@overload`` set, methods, nested and private functions count for nothing."""
    (tmp_path / "gateway" / "a").mkdir(parents=True)
    (tmp_path / "gateway" / "_pb").mkdir()
    (tmp_path / "channel").mkdir()
    (tmp_path / "workers").mkdir()
    (tmp_path / "gateway" / "a" / "one.py").write_text(
        "from typing import overload\n"
        "def parse(url: str) -> str: ...\n"
        "@overload\ndef build(x: int) -> int: ...\n@overload\ndef build(x: str) -> str: ...\n"
        "def build(x): return x\n"
        "def load() -> None: ...\n"
        "def _private() -> None: ...\n"
    )
    (tmp_path / "channel" / "two.py").write_text(
        "try:\n    def parse(body: bytes) -> bytes: ...\nexcept ImportError:\n    pass\n"
        "def load() -> None: ...\n"
        "class C:\n    def build(self) -> None: ...\n"
        "def outer() -> None:\n    def _private() -> None: ...\n"
    )
    (tmp_path / "gateway" / "_pb" / "gen.py").write_text("def parse() -> None: ...\n")
    (tmp_path / "workers" / "w.py").write_text("def load() -> None: ...\n")
    where = function_definitions(tmp_path)
    load = ("gateway/a/one.py", "channel/two.py")
    assert two_meanings(where, {"load": load}) == {
        "parse": ["gateway/a/one.py", "channel/two.py"],
        "load": ["gateway/a/one.py", "channel/two.py", "workers/w.py"],
    }
    (tmp_path / "workers" / "w.py").unlink()
    assert two_meanings(function_definitions(tmp_path), {"load": load}) == {
        "parse": ["gateway/a/one.py", "channel/two.py"],
    }
