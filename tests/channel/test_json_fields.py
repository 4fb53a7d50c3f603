"""The checks each JSON request op's fields must pass, as the decoder applies them."""

from __future__ import annotations

from typing import Any

import pytest

from channel.json_fields import REQUEST_FIELDS, is_int, is_names, is_str


def test_integers_are_not_booleans_or_floats() -> None:
    assert is_int(0) and is_int(-(2**70))
    assert not is_int(True) and not is_int(1.0) and not is_int("1")


def test_strings_and_lists_of_names() -> None:
    assert is_str("") and not is_str(b"x")
    assert is_names([]) and is_names(["a", ""])
    assert not is_names(("a",)) and not is_names(["a", 1]) and not is_names("ab")


def test_every_op_has_its_fields() -> None:
    assert {op: set(fields) for op, fields in REQUEST_FIELDS.items()} == {
        "load": {"key", "path", "platform", "intra_op", "inter_op", "tags"},
        "unload": {"key"},
        "ping": set(),
        "stop": set(),
    }


@pytest.mark.parametrize(
    ("op", "field", "good", "bad"),
    [
        ("load", "tags", [["serve"]], [[], ["serve", 1]]),
        ("load", "intra_op", [0, 8], [1.0, True, "1"]),
        ("unload", "key", ["m:1", ""], [None, 1]),
    ],
)
def test_field_checks(op: str, field: str, good: list[Any], bad: list[Any]) -> None:
    check, what = REQUEST_FIELDS[op][field]
    assert what
    assert all(check(value) for value in good)
    assert not any(check(value) for value in bad)
