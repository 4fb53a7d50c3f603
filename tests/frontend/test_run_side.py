"""A front end's run side applies the supervisor's worker messages to its dispatcher: a channel
(real descriptors, as the supervisor makes them) becomes a routable link, routes follow, a death
or a replacement closes the old endpoint with its reason, and a malformed channel is refused.
Nothing is faked: no worker is needed, as no run is sent."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from gateway.frontend.run_side import RunSide
from gateway.runs.shared_load import LoadTable, SharedLoadDispatcher
from gateway.supervisor.fanout import channel_fds


@pytest.fixture
def table() -> Iterator[LoadTable]:
    memfd = LoadTable.create_memfd(1, 2)
    table = LoadTable(memfd, 1, 2)
    yield table
    table.close()
    os.close(memfd)


@asynccontextmanager
async def run_side(table: LoadTable, changes: list[str]) -> AsyncIterator[RunSide]:
    """A run side over ``table`` that appends "changed" to ``changes`` at each change of its
    links or routes (closed at the end)."""
    side = RunSide(SharedLoadDispatcher(table, 0), lambda: changes.append("changed"))
    try:
        yield side
    finally:
        side.close()


def _fds(index: int) -> list[int]:
    return channel_fds(index, 4096, 4096)


async def test_a_channel_becomes_a_routable_link_and_routes_follow(table: LoadTable) -> None:
    changes: list[str] = []
    async with run_side(table, changes) as side:
        side.worker(1, 4242, ["m:1"], _fds(1))
        (link,) = side.dispatcher.links
        assert (link.index, link.routed, link.alive) == (1, {"m:1"}, True)
        assert side.dispatcher.pick("m:1") is link
        side.route(1, "m:2")
        side.unroute(1, "m:1")
        assert link.routed == {"m:2"}
    assert changes == ["changed"] * 3


async def test_a_death_closes_the_endpoint_with_its_reason_and_a_stale_pid_is_ignored(
    table: LoadTable,
) -> None:
    changes: list[str] = []
    async with run_side(table, changes) as side:
        side.worker(0, 10, ["m:1"], _fds(0))
        (link,) = side.dispatcher.links
        side.gone(0, 9, "an older process")  # not the current worker: nothing
        assert link.endpoint.closed is None
        side.gone(0, 10, "worker 0 exited (code -9)")
        assert link.endpoint.closed is not None
        assert link.endpoint.closed.message == "worker 0 exited (code -9)"
        assert not link.alive
    assert changes == ["changed", "changed"]


async def test_a_replacement_closes_the_old_channel_and_routes_to_the_new(table: LoadTable) -> None:
    changes: list[str] = []
    async with run_side(table, changes) as side:
        side.worker(0, 10, ["m:1"], _fds(0))
        (old,) = side.dispatcher.links
        side.worker(0, 11, ["m:1"], _fds(0))
        (new,) = side.dispatcher.links
        assert new is not old and old.endpoint.closed is not None
        assert old.endpoint.closed.message == "worker 0 was replaced"
        assert side.dispatcher.pick("m:1") is new
        side.gone(0, 10, "the old one exited")  # the replaced pid: nothing
        assert new.endpoint.closed is None
    assert changes == ["changed", "changed"]


async def test_a_channel_without_four_descriptors_is_closed_and_refused(table: LoadTable) -> None:
    changes: list[str] = []
    async with run_side(table, changes) as side:
        *fds, extra = _fds(0)
        os.close(extra)
        side.worker(0, 10, [], fds)
        assert side.dispatcher.links == []
        for fd in fds:
            with pytest.raises(OSError):
                os.fstat(fd)
    assert changes == []


async def test_closing_fails_every_channel_as_shutting_down(table: LoadTable) -> None:
    async with run_side(table, []) as side:
        side.worker(0, 10, [], _fds(0))
        (link,) = side.dispatcher.links
        side.close()
        assert link.endpoint.closed is not None
        assert link.endpoint.closed.message == "the server is shutting down"
