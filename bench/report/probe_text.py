"""How the report of ``python -m bench probes`` reads and writes its figures: a value deep in the
results (:func:`dig`), milliseconds, sizes, status counts, and a goal row's verdict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def dig(tree: Mapping[str, Any], *path: str) -> Any:
    """``tree[path[0]][path[1]]...``, or None where a key is missing."""
    node: Any = tree
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def ms(value: float | None) -> str:
    """Milliseconds as ``12 ms`` or ``8.50 ms`` (— for None)."""
    return "—" if value is None else f"{value:.0f} ms" if value >= 10 else f"{value:.2f} ms"


def size(nbytes: float) -> str:
    """Bytes as MiB, or kB under one MiB."""
    return f"{nbytes / 2**20:.1f} MiB" if nbytes >= 2**20 else f"{nbytes / 1e3:.1f} kB"


def statuses(counts: Mapping[str, int] | None) -> str:
    """Status counts as ``200 12, 503 3`` (``none`` when empty)."""
    return ", ".join(f"{k} {v}" for k, v in sorted((counts or {}).items())) or "none"


def met_word(goal: Mapping[str, Any]) -> str:
    """A row's verdict: ``met``, ``not met``, ``observed`` (a behaviour reported, no bar) or
    ``n/a`` (not measured)."""
    if goal["met"] is None:
        return "n/a" if goal["value"] == "not measured" else "observed"
    return "met" if goal["met"] else "not met"
