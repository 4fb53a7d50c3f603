"""Writes docs/flags.md: every flag ``tensorgate --help`` lists, with its type, default and meaning.

The page is made from the flag catalogue (:mod:`gateway.config.flag_table`) and each setting's own
description (:mod:`gateway.config.settings`), the text ``--help`` prints: TF Serving's flags in
upstream's order, then tensorgate's own (those whose description starts ``tensorgate:``).
``tests/test_docs.py`` regenerates the page and fails when the committed one differs.

Usage: ``python scripts/flag_reference.py [OUT]`` (default: docs/flags.md).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from gateway.config.flag_table import FLAGS, FlagSpec
from gateway.config.flags import flag_default, flag_help
from gateway.config.settings import Settings

OWN = "tensorgate:"
"""How a tensorgate flag's description starts."""

HEADER = """\
# Flags

Every flag of TF Serving's `tensorflow_model_server` is recognised, in upstream's order below:
an implemented one works as in TF Serving; one marked *accepted, no effect* tunes a part of TF
Serving that tensorgate does not have; one marked *not supported yet* is accepted only with TF
Serving's default, and any other value is refused at start with its name, never ignored.
tensorgate's own flags follow. `tensorgate --help` prints the same text.

This page is generated from the flag catalogue (`gateway/config/flag_table.py`) and the
settings' descriptions by `scripts/flag_reference.py`; a test regenerates it and fails when it
differs. A default marked *CPUs* depends on the CPUs the process may use.
"""


def _cell(text: str) -> str:
    """``text`` safe in a Markdown table cell: no pipes, no HTML tags, no emphasis."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")


def _default(spec: FlagSpec) -> str:
    field = _FIELDS.get(spec.name)
    if spec.default_per_cpu or (
        field is not None and field.default_factory is not dataclasses.MISSING
    ):
        return "*CPUs*"
    value = flag_default(spec)
    if spec.kind == "bool":
        return "`true`" if value else "`false`"
    if spec.kind == "string":
        return f'`"{value}"`' if value else '`""`'
    return f"`{value}`"


def _row(spec: FlagSpec) -> str:
    meaning = flag_help(spec).removeprefix(OWN).strip()
    return f"| `--{spec.name}` | {spec.kind} | {_default(spec)} | {_cell(meaning)} |"


_FIELDS = {field.name: field for field in dataclasses.fields(Settings)}
_TABLE_HEAD = "| flag | type | default | meaning |\n|---|---|---|---|"


def page() -> str:
    """The whole of docs/flags.md."""
    upstream = [s for s in FLAGS.values() if not flag_help(s).startswith(OWN)]
    own = [s for s in FLAGS.values() if flag_help(s).startswith(OWN)]
    parts = [
        HEADER,
        "## TF Serving's flags\n",
        _TABLE_HEAD,
        *(_row(spec) for spec in upstream),
        "\n## tensorgate's own flags\n",
        _TABLE_HEAD,
        *(_row(spec) for spec in own),
    ]
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> None:
    out = (
        Path(argv[1])
        if len(argv) > 1
        else Path(__file__).resolve().parent.parent / "docs" / "flags.md"
    )
    out.write_text(page(), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv)
