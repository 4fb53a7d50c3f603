"""The bound on bytes that in-flight requests hold: what decoded inputs count, reserve past the
limit refused at once, release giving back exactly what was reserved."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.errors import ResourceExhausted
from gateway.serving.budget import OBJECT_ELEMENT_BYTES, MemoryBudget, inputs_nbytes


def test_numeric_inputs_count_their_buffers_and_strings_a_reference_and_header_each() -> None:
    x = np.zeros((4, 8), np.float32)
    words = np.array([b"a" * 1000, b""], dtype=object)  # the payload stays in the message
    assert inputs_nbytes({"x": x}) == 128
    assert inputs_nbytes({"x": x, "w": words}) == 128 + 2 * OBJECT_ELEMENT_BYTES
    assert inputs_nbytes({}) == 0


def test_reserve_up_to_the_limit_then_refuse_until_released() -> None:
    budget = MemoryBudget(100)
    budget.reserve(60)
    budget.reserve(40)
    with pytest.raises(
        ResourceExhausted,
        match=r"^in-flight requests already hold 100 bytes of input tensors; 1 more would pass "
        r"the limit of 100 bytes \(--max_inflight_bytes\); retry later$",
    ):
        budget.reserve(1)
    assert budget.held_bytes == 100  # a refusal holds nothing
    budget.release(60)
    budget.reserve(50)
    assert budget.held_bytes == 90


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="limit_bytes must be >= 1, got 0"):
        MemoryBudget(0)
