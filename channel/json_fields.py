"""The fields each JSON request op must carry, as checks :func:`channel.messages.decode_request`
applies: ``REQUEST_FIELDS[op][field]`` is ``(check, what it must be)``. A run is not JSON: its
binary layout is :mod:`channel.wire`'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_str(value: object) -> bool:
    return isinstance(value, str)


def is_names(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


_Check = tuple[Callable[[object], bool], str]
REQUEST_FIELDS: Final[dict[str, dict[str, _Check]]] = {
    "load": {
        "key": (is_str, "a string"),
        "path": (is_str, "a string"),
        "platform": (is_str, "a string"),
        "intra_op": (is_int, "an integer"),
        "inter_op": (is_int, "an integer"),
        "tags": (lambda v: is_names(v) and bool(v), "a non-empty list of strings"),
    },
    "unload": {"key": (is_str, "a string")},
    "ping": {},
    "stop": {},
}
