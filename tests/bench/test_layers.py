"""bench/'s packages import downward only, and no module imports another's private name.

Top to bottom: the CLI (``cli``, ``__main__``) → ``scenarios`` → ``report`` → ``measure`` →
``systems`` → ``load`` → ``cpus``. A package may import its own modules; the peers' own processes
(``systems/peers/``, run in the peers' virtualenvs) import nothing of bench.
"""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
LAYERS = ("cpus", "load", "systems", "measure", "report", "scenarios", "cli")
"""Bottom to top."""


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "cli"
    return LAYERS.index("cli" if top == "__main__" else top)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every ``bench`` import in ``path``, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bench"):
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("bench")]
    return found


def _modules() -> dict[str, Path]:
    modules = {}
    for path in BENCH.rglob("*.py"):
        if "results" in path.parts or ".venvs" in path.parts:
            continue
        parts = path.relative_to(BENCH.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def test_packages_import_only_the_layers_below_them() -> None:
    modules = _modules()
    assert len(modules) > 40
    upward = [
        f"{source} → {target}"
        for source, path in modules.items()
        for target, _ in _imports(path)
        if _layer(target) > _layer(source)
    ]
    assert upward == []


def test_no_module_imports_a_private_name_of_another() -> None:
    private = [
        f"{source}: {target}.{name}"
        for source, path in _modules().items()
        for target, names in _imports(path)
        for name in names
        if name.startswith("_")
    ]
    assert private == []


def test_the_peers_processes_import_nothing_of_bench() -> None:
    peers = {m: p for m, p in _modules().items() if m.startswith("bench.systems.peers.")}
    assert len(peers) >= 7
    assert {m: _imports(p) for m, p in peers.items() if _imports(p)} == {}
