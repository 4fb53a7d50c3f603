"""How a settings field carries its contract: a fixed default and its documentation.

Every :class:`~gateway.config.settings.Settings` field keeps its unit, default and reason in
``metadata["doc"]``, which is also its ``--help`` text (:mod:`gateway.config.flags`).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

MIB = 1024 * 1024
"""Bytes in a mebibyte."""


def setting(default: Any, doc: str) -> Any:
    """A dataclass field with a fixed default and its documentation (unit, default, reason)."""
    return field(default=default, metadata={"doc": doc})
