"""V2 gRPC parameter maps written from Python values (what a client does; tensorgate only reads
them: :func:`gateway.v2.parameters.from_proto`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.v2.parameters import Value


def to_proto(values: Mapping[str, Value], params: Any) -> None:
    """Write Python values into a gRPC parameter map (``bool`` before ``int``: bool is an int)."""
    for name, value in values.items():
        if isinstance(value, bool):
            params[name].bool_param = value
        elif isinstance(value, int):
            if value >= 2**63:
                params[name].uint64_param = value
            else:
                params[name].int64_param = value
        elif isinstance(value, float):
            params[name].double_param = value
        else:
            params[name].string_param = value
