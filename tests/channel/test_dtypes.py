"""The one dtype table: canonical names ⇄ numpy dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from channel.dtypes import DTYPE_NAMES, dtype_name, numpy_dtype, string_items


@pytest.mark.parametrize("name", sorted(DTYPE_NAMES))
def test_every_dtype_name_round_trips(name: str) -> None:
    assert dtype_name(numpy_dtype(name)) == name


def test_dtype_names_cover_numpy_spellings() -> None:
    assert dtype_name(np.dtype(">i4")) == "int32"
    assert dtype_name(np.dtype("U3")) == "string"
    assert numpy_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    with pytest.raises(ValueError, match="unknown dtype"):
        numpy_dtype("float8")
    with pytest.raises(ValueError, match="no canonical name"):
        dtype_name(np.dtype("datetime64[s]"))


def test_string_items_are_bytes_in_row_major_order() -> None:
    array = np.array([[b"a", "é"], ["", b"\xff"]], dtype=object).T
    assert string_items(array) == [b"a", b"", "é".encode(), b"\xff"]
    with pytest.raises(TypeError, match="element of type int, expected bytes or str"):
        string_items(np.array([b"a", 1], dtype=object))
