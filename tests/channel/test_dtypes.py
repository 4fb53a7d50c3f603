"""The one dtype table: canonical names ⇄ numpy dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from channel.dtypes import DTYPE_NAMES, dtype_name, numpy_dtype


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
