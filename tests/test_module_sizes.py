"""The layout rule: no hand-written module in gateway/, workers/ or channel/ over 600 lines.

The cap is a backstop, not a target: modules are cut by cohesion, and one that only nears it
is read for a role that could stand alone.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600


def test_no_module_over_600_lines() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for package in ("gateway", "workers", "channel")
        for path in (ROOT / package).rglob("*.py")
        if "_pb" not in path.parts
    }
    assert len(sizes) > 50
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
