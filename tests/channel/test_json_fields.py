"""The checks each JSON request op's fields must pass, as the decoder applies them."""

from __future__ import annotations

from typing import Any

import pytest

from channel.dtypes import DTYPE_NAMES
from channel.json_fields import REQUEST_FIELDS, is_int, is_names, is_str, is_tensor

TENSOR: dict[str, Any] = {"name": "x", "dtype": "int8", "shape": [0, 3], "offset": 0, "nbytes": 0}


def test_integers_are_not_booleans_or_floats() -> None:
    assert is_int(0) and is_int(-(2**70))
    assert not is_int(True) and not is_int(1.0) and not is_int("1")


def test_strings_and_lists_of_names() -> None:
    assert is_str("") and not is_str(b"x")
    assert is_names([]) and is_names(["a", ""])
    assert not is_names(("a",)) and not is_names(["a", 1]) and not is_names("ab")


def test_a_tensor_descriptor_is_fully_known_and_never_negative() -> None:
    assert is_tensor(TENSOR)
    assert all(is_tensor({**TENSOR, "dtype": dtype}) for dtype in DTYPE_NAMES)
    for bad in (
        {**TENSOR, "name": 1},
        {**TENSOR, "dtype": "float8"},
        {**TENSOR, "shape": (0, 3)},
        {**TENSOR, "shape": [-1, 3]},
        {**TENSOR, "shape": [True]},
        {**TENSOR, "offset": -64},
        {**TENSOR, "nbytes": 1.0},
        {k: v for k, v in TENSOR.items() if k != "nbytes"},
        [TENSOR],
    ):
        assert not is_tensor(bad), bad


def test_every_op_has_its_fields() -> None:
    assert {op: set(fields) for op, fields in REQUEST_FIELDS.items()} == {
        "load": {"key", "path", "platform", "intra_op", "inter_op", "tags"},
        "unload": {"key"},
        "run": {"key", "inputs", "outputs", "deadline", "signature"},
        "ping": set(),
        "stop": set(),
    }


@pytest.mark.parametrize(
    ("op", "field", "good", "bad"),
    [
        ("load", "tags", [["serve"]], [[], ["serve", 1]]),
        ("run", "inputs", [[], [TENSOR]], [{}, [{}]]),
        ("run", "outputs", [None, [], ["y"]], ["y", [None]]),
        ("run", "deadline", [None, 0, 12.5], ["soon", True]),
    ],
)
def test_field_checks(op: str, field: str, good: list[Any], bad: list[Any]) -> None:
    check, what = REQUEST_FIELDS[op][field]
    assert what
    assert all(check(value) for value in good)
    assert not any(check(value) for value in bad)
