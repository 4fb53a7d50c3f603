"""A bound on the memory that in-flight requests hold: bytes of decoded input tensors.

Decoding is synchronous on the event loop, so at most one request is being expanded at any time:
with every admitted request's bytes reserved here until it completes, the gateway holds at most
``limit_bytes`` plus one request's worth (``--max_request_bytes``) of decoded inputs, whatever the
number of connections. Past the bound a request is refused at once with RESOURCE_EXHAUSTED
(retryable), never queued.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import numpy as np

from gateway.errors import ResourceExhausted

OBJECT_ELEMENT_BYTES = 8 + sys.getsizeof(b"")
"""What one element of a string (object) array costs besides its own bytes: a reference and a
``bytes`` object's header."""


def inputs_nbytes(inputs: Mapping[str, np.ndarray]) -> int:
    """Bytes held by decoded inputs: numeric arrays' buffers; strings at
    :data:`OBJECT_ELEMENT_BYTES` per element (their payload stays in the request's message)."""
    total = 0
    for array in inputs.values():
        total += array.size * OBJECT_ELEMENT_BYTES if array.dtype.kind == "O" else array.nbytes
    return total


class MemoryBudget:
    """``limit_bytes`` shared by every in-flight request (``--max_inflight_bytes``)."""

    def __init__(self, limit_bytes: int) -> None:
        if limit_bytes < 1:
            raise ValueError(f"limit_bytes must be >= 1, got {limit_bytes}")
        self.limit_bytes = limit_bytes
        self.held_bytes = 0

    def reserve(self, nbytes: int) -> None:
        """Hold ``nbytes`` more, or raise RESOURCE_EXHAUSTED when that would pass the limit."""
        if self.held_bytes + nbytes > self.limit_bytes:
            raise ResourceExhausted(
                f"in-flight requests already hold {self.held_bytes} bytes of input tensors; "
                f"{nbytes} more would pass the limit of {self.limit_bytes} bytes "
                "(--max_inflight_bytes); retry later"
            )
        self.held_bytes += nbytes

    def release(self, nbytes: int) -> None:
        """Give back what :meth:`reserve` took."""
        self.held_bytes -= nbytes
