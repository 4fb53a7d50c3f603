"""Tensor payloads in the shared-memory areas: every dtype, strings, empty tensors, bad bytes."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from channel.dtypes import DTYPE_NAMES, dtype_name, numpy_dtype
from channel.shm.payload import read_tensor, tensor_nbytes, write_tensor


def _sample(name: str, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """A tensor of dtype ``name`` and ``shape`` whose elements all differ (strings: bytes)."""
    count = int(np.prod(shape))
    if name == "string":
        out = np.empty(count, dtype=object)
        out[:] = [f"é{i}".encode() * i for i in range(count)]
        return out.reshape(shape)
    values = np.arange(count) % 2 if name == "bool" else np.arange(count) + 1
    return values.astype(numpy_dtype(name)).reshape(shape)


@pytest.mark.parametrize("shape", [(2, 3), (0, 3), ()], ids=["2x3", "empty", "scalar"])
@pytest.mark.parametrize("name", sorted(DTYPE_NAMES))
def test_every_dtype_round_trips(name: str, shape: tuple[int, ...]) -> None:
    arr = _sample(name, shape)
    buf = bytearray(tensor_nbytes(arr))
    write_tensor(memoryview(buf), arr)
    back = read_tensor(memoryview(buf), name, list(shape))
    assert back.dtype == numpy_dtype(name) and back.shape == shape
    if name == "string":
        assert back.tolist() == arr.tolist()
    else:
        assert back.tobytes() == arr.tobytes()  # bit for bit


@pytest.mark.parametrize(
    "arr",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.arange(6, dtype=np.float16).reshape(3, 2)[::2],  # not contiguous
        np.arange(4, dtype=">i8"),  # big-endian
        np.array([True, False]),
        np.array([1 + 2j], dtype=np.complex64),
        np.arange(3, dtype=np.float32).astype(ml_dtypes.bfloat16),
        np.zeros((0, 4), dtype=np.uint16),
        np.array(7, dtype=np.uint64),
    ],
)
def test_fixed_size_tensors_round_trip(arr: np.ndarray[Any, Any]) -> None:
    buf = bytearray(tensor_nbytes(arr) + 8)
    write_tensor(memoryview(buf), arr)
    back = read_tensor(memoryview(buf), dtype_name(arr.dtype), list(arr.shape))
    assert back.dtype.isnative
    np.testing.assert_array_equal(back, arr)


def test_string_tensors_round_trip_as_bytes() -> None:
    arr = np.array([["a", "héllo"], ["", "x" * 300]], dtype=object)
    arr[0, 0] = b"\xff\x00raw"
    nbytes = tensor_nbytes(arr)
    assert nbytes == 8 * 5 + len(b"\xff\x00raw") + len("héllo".encode()) + 300
    buf = bytearray(nbytes)
    write_tensor(memoryview(buf), arr)
    back = read_tensor(memoryview(buf), "string", [2, 2])
    assert back.dtype == object and back.shape == (2, 2)
    assert back.tolist() == [[b"\xff\x00raw", "héllo".encode()], [b"", b"x" * 300]]
    empty = np.array([], dtype=object)
    buf = bytearray(tensor_nbytes(empty))
    write_tensor(memoryview(buf), empty)
    assert read_tensor(memoryview(buf), "string", [0]).shape == (0,)


def test_corrupt_or_short_payloads_are_refused() -> None:
    buf = bytearray(64)
    write_tensor(memoryview(buf), np.array([b"abc"], dtype=object))
    with pytest.raises(ValueError, match="holds 1 elements, shape says 2"):
        read_tensor(memoryview(buf), "string", [2])
    buf[8:16] = (10**6).to_bytes(8, "little")
    with pytest.raises(ValueError, match="overruns"):
        read_tensor(memoryview(buf), "string", [1])
    with pytest.raises(ValueError, match="needs 72 bytes"):
        read_tensor(memoryview(buf), "float64", [9])
    with pytest.raises(ValueError, match="negative dimension"):
        read_tensor(memoryview(buf), "float32", [-1])
    with pytest.raises(ValueError, match="view has 64"):
        write_tensor(memoryview(buf), np.zeros(9, dtype=np.float64))
    with pytest.raises(TypeError, match="element of type int"):
        tensor_nbytes(np.array([1, "a"], dtype=object))
