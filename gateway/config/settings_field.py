"""How a settings field carries its contract: a fixed default and its documentation.

Every :class:`~gateway.config.settings.Settings` field keeps its unit, default and reason in
``metadata["doc"]``, which is also its ``--help`` text (:mod:`gateway.config.flags`).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

MIB = 1024 * 1024
"""Bytes in a mebibyte."""

OS_CHOSEN_PORT = -1
"""``--rest_api_port=-1``: REST on a free port the OS chooses (TF Serving's 0 turns REST off)."""


def port_to_bind(port: int) -> int:
    """The port a socket binds for a port flag: 0 (the OS chooses) for OS_CHOSEN_PORT."""
    return 0 if port == OS_CHOSEN_PORT else port


def setting(default: Any, doc: str) -> Any:
    """A dataclass field with a fixed default and its documentation (unit, default, reason)."""
    return field(default=default, metadata={"doc": doc})
