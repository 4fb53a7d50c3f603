"""The fields each JSON request op must carry, as checks :func:`channel.messages.decode_request`
applies: ``REQUEST_FIELDS[op][field]`` is ``(check, what it must be)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from channel.dtypes import DTYPE_NAMES


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_str(value: object) -> bool:
    return isinstance(value, str)


def is_names(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def is_tensor(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and value.get("dtype") in DTYPE_NAMES
        and isinstance(shape := value.get("shape"), list)
        and all(is_int(d) and d >= 0 for d in shape)
        and all(is_int(value.get(k)) and value[k] >= 0 for k in ("offset", "nbytes"))
    )


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
    "run": {
        "key": (is_str, "a string"),
        "inputs": (
            lambda v: isinstance(v, list) and all(map(is_tensor, v)),
            "a list of tensor descriptors {name, dtype, shape, offset, nbytes}",
        ),
        "outputs": (lambda v: v is None or is_names(v), "a list of strings or null"),
        "deadline": (lambda v: v is None or is_int(v) or isinstance(v, float), "a number or null"),
        "signature": (is_str, "a string"),
    },
    "ping": {},
    "stop": {},
}
