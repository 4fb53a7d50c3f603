"""Merge / pad / split as pure functions (no event loop)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.batching import merge
from gateway.errors import Internal, InvalidArgument


def test_request_size_and_compat_key() -> None:
    a = np.zeros((3, 4), np.float32)
    assert merge.request_size({"a": a, "b": np.zeros((3,), np.int64)}) == 3
    with pytest.raises(InvalidArgument, match="scalar"):
        merge.request_size({"a": np.float32(1.0) * np.ones(())})
    same = merge.compat_key({"a": a}, pad_variable_length=False)
    assert same == merge.compat_key({"a": np.ones((9, 4), np.float32)}, pad_variable_length=False)
    assert same != merge.compat_key({"a": np.ones((9, 5), np.float32)}, pad_variable_length=False)
    assert same != merge.compat_key({"a": np.ones((9, 4), np.float64)}, pad_variable_length=False)
    padded = merge.compat_key({"a": a}, pad_variable_length=True)
    assert padded == merge.compat_key({"a": np.ones((1, 7), np.float32)}, pad_variable_length=True)


@pytest.mark.parametrize(
    ("rows", "allowed", "expected"),
    [(3, (2, 4, 8), 4), (4, (2, 4, 8), 4), (1, (), 1), (7, (8,), 8)],
)
def test_padded_size(rows: int, allowed: tuple[int, ...], expected: int) -> None:
    assert merge.padded_size(rows, allowed) == expected


@given(st.integers(1, 200), st.integers(0, 50), st.integers(1, 40))
def test_split_sizes_cover_the_task_and_respect_limits(size: int, room: int, max_rows: int) -> None:
    chunks = merge.split_sizes(size, room, max_rows)
    assert sum(chunks) == size
    assert all(0 < c <= max_rows for c in chunks[1:])
    assert chunks[0] <= max(room, max_rows)


def test_fill_rows_concatenates_then_pads_with_the_first_row() -> None:
    parts = [{"x": np.full((1, 2), 1.0)}, {"x": np.full((2, 2), 2.0)}]
    dest = np.empty((4, 2))
    merge.fill_rows("x", dest, parts)
    np.testing.assert_array_equal(dest, [[1, 1], [2, 2], [2, 2], [1, 1]])


def test_fill_rows_pads_variable_length_with_each_part_first_element() -> None:
    parts = [{"s": np.array([[b"a"]], object)}, {"s": np.array([[b"b", b"c"]], object)}]
    layout = merge.batch_layout(parts, 2)
    assert layout["s"][1] == (2, 2)
    dest = np.empty((2, 2), object)
    merge.fill_rows("s", dest, parts)
    assert dest.tolist() == [[b"a", b"a"], [b"b", b"c"]]


def test_split_outputs_checks_the_batch_dimension() -> None:
    outputs = {"y": np.arange(8).reshape(4, 2)}
    first, second = merge.split_outputs(outputs, [1, 2], 4)
    np.testing.assert_array_equal(first["y"], [[0, 1]])
    np.testing.assert_array_equal(second["y"], [[2, 3], [4, 5]])
    with pytest.raises(Internal, match="batch dimension"):
        merge.split_outputs({"y": np.arange(3)}, [1, 2], 4)
