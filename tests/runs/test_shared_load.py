"""The load table every front end maps, and routing by the load of all of them."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import numpy as np
import pytest

from channel.shm.channel import Channel
from gateway.errors import Unavailable
from gateway.runs.shared_load import LoadTable, SharedLoadDispatcher
from gateway.worker_channel.endpoint import Endpoint
from tests.support.fakes import FakeLink


@pytest.fixture
def memfd() -> Iterator[int]:
    fd = LoadTable.create_memfd(frontends=3, workers=2)
    try:
        yield fd
    finally:
        os.close(fd)


def test_each_mapping_sees_every_front_ends_slots(memfd: int) -> None:
    """Two mappings of one memfd, as two front-end processes have."""
    first, second = LoadTable(memfd, 3, 2), LoadTable(memfd, 3, 2)
    first.set(0, 1, 2)
    second.set(2, 1, 3)
    second.set(2, 0, 1)
    assert (first.load(0), first.load(1)) == (1, 5)
    assert (second.load(0), second.load(1)) == (1, 5)
    first.clear_row(2)
    assert (second.load(0), second.load(1)) == (0, 2)
    first.close()
    first.close()  # idempotent
    second.close()


def test_a_table_must_fit_its_memfd(memfd: int) -> None:
    with pytest.raises(ValueError, match="too small"):
        LoadTable(memfd, 4, 4)
    with pytest.raises(ValueError, match=">= 1 row"):
        LoadTable(memfd, 0, 2)


def _dispatcher(memfd: int, frontend: int) -> tuple[SharedLoadDispatcher, list[FakeLink]]:
    dispatcher = SharedLoadDispatcher(LoadTable(memfd, 3, 2), frontend, max_in_flight=2)
    links = [FakeLink(i, on_run_done=dispatcher.wake) for i in range(2)]
    for link in links:
        dispatcher.add_link(link)  # type: ignore[arg-type]
    return dispatcher, links


def test_pick_prefers_the_worker_least_loaded_over_all_front_ends(memfd: int) -> None:
    dispatcher, (a, b) = _dispatcher(memfd, frontend=0)
    other = LoadTable(memfd, 3, 2)
    assert dispatcher.pick("m:1") is a  # all idle: the first
    other.set(1, 0, 2)  # another front end keeps worker 0 busy
    assert dispatcher.pick("m:1") is b
    other.set(2, 1, 3)
    assert dispatcher.pick("m:1") is a
    other.close()


def test_the_cap_is_this_front_ends_own(memfd: int) -> None:
    dispatcher, (a, b) = _dispatcher(memfd, frontend=0)
    other = LoadTable(memfd, 3, 2)
    other.set(1, 1, 5)
    a.runs_in_flight = 2  # at our cap, though the least loaded over all: the other has room
    assert dispatcher.pick("m:1") is b
    b.runs_in_flight = 2
    assert dispatcher.pick("m:1") is None  # busy here: wait for one of our own runs
    b.routed = set()
    a.routed = set()
    with pytest.raises(Unavailable):
        dispatcher.pick("m:1")
    other.close()


def test_a_starting_front_end_zeroes_its_row(memfd: int) -> None:
    other = LoadTable(memfd, 3, 2)
    other.set(1, 0, 4)  # left by a front end that died in slot 1
    SharedLoadDispatcher(LoadTable(memfd, 3, 2), 1)
    assert other.load(0) == 0
    other.close()


async def test_run_links_publish_their_runs_in_flight(memfd: int) -> None:
    table = LoadTable(memfd, 3, 2)
    dispatcher = SharedLoadDispatcher(table, 2)
    channel = Channel.create(index=1, input_bytes=1 << 12, output_bytes=1 << 12)
    endpoint = Endpoint(1, channel, asyncio.get_running_loop())
    endpoint.open()
    link = dispatcher.attach(endpoint)
    layout = {"x": (np.dtype(np.float32), (2, 2))}
    link.submit("m:1", layout, lambda name, dest: None, None, None)
    link.submit("m:1", layout, lambda name, dest: None, None, None)
    assert table.load(1) == 2 and link.runs_in_flight == 2
    endpoint.close(Unavailable("worker 1 exited (code -9)"))  # fails its runs
    assert table.load(1) == 0 and link.runs_in_flight == 0
    table.close()
