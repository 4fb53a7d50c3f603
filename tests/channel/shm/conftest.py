"""The channel tests' pair: a gateway end and a worker end, both in this process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from channel.shm.channel import Channel
from tests.channel.shm.ends import worker_end


@pytest.fixture
def pair() -> Iterator[tuple[Channel, Channel]]:
    """(gateway end, worker end) of one small channel, closed after the test."""
    gateway = Channel.create(
        index=3, input_bytes=1 << 16, output_bytes=1 << 14, ring_slots=4, slot_bytes=256
    )
    worker = worker_end(gateway)
    yield gateway, worker
    worker.close()
    gateway.close()
