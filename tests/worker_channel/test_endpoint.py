"""The gateway's end of a channel: each reply to the link that posted its request, every link
failed on close. A real channel; the worker's end is played by the test, the links are recorders."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from channel import messages
from channel.messages import Reply
from channel.shm.channel import Channel
from gateway.errors import ResourceExhausted, ServingError, Unavailable
from gateway.worker_channel.endpoint import Endpoint
from tests.support.waits import until, until_notified
from tests.support.worker_end import WAIT_S, WorkerEnd


@dataclass
class Recorder:
    """A link that records what the endpoint hands it; ``got`` is set on each reply."""

    replies: list[Any] = field(default_factory=list)  # ping and ok replies are read by key
    drains: int = 0
    failed: list[ServingError] = field(default_factory=list)
    got: asyncio.Event = field(default_factory=asyncio.Event)

    def take(self, reply: Reply) -> None:
        self.replies.append(reply)
        self.got.set()

    def taken(self) -> None:
        self.drains += 1

    def fail_all(self, error: ServingError) -> None:
        self.failed.append(error)


@pytest.fixture
def channel() -> Iterator[Channel]:
    channel = Channel.create(index=3, input_bytes=1 << 12, output_bytes=1 << 12, ring_slots=4)
    yield channel
    channel.close()


@asynccontextmanager
async def _endpoint(channel: Channel) -> AsyncIterator[tuple[Endpoint, WorkerEnd]]:
    """An endpoint over ``channel``, and the worker's end of it played by the test."""
    endpoint = Endpoint(3, channel, asyncio.get_running_loop())
    try:
        yield endpoint, WorkerEnd(channel)
    finally:
        endpoint.close(Unavailable("test over"))


async def test_each_reply_goes_to_the_link_that_posted_its_request(channel: Channel) -> None:
    async with _endpoint(channel) as (endpoint, worker):
        a, b = Recorder(), Recorder()
        endpoint.attach(a)
        endpoint.attach(b)
        first, second = endpoint.next_id(), endpoint.next_id()
        endpoint.post(a, messages.ping_request(first))
        endpoint.post(b, messages.unload_request(second, key="m:1"))
        assert [r["id"] for r in worker.requests()] == [first, second]
        worker.post(messages.ok_reply(second))  # answered out of order
        worker.post(messages.ping_reply(first, 99))
        await until_notified(a.got, lambda: a.replies, "a reply to the first link")
        await until_notified(b.got, lambda: b.replies, "a reply to the second link")
        assert a.replies == [messages.ping_reply(first, 99)]
        assert b.replies == [messages.ok_reply(second)]
        assert a.drains >= 1 and b.drains >= 1  # told once the replies of a doorbell are taken


async def test_the_ready_message_goes_to_the_link_that_expects_it(channel: Channel) -> None:
    async with _endpoint(channel) as (endpoint, worker):
        link = Recorder()
        endpoint.attach(link)
        endpoint.expect(messages.READY_ID, link)
        worker.post(messages.ready(1234))
        await until_notified(link.got, lambda: link.replies, "a reply")
        assert link.replies == [messages.ready(1234)]
        assert endpoint.next_id() > messages.READY_ID  # requests never reuse the ready id


async def test_replies_nobody_awaits_and_garbage_are_logged_and_dropped(
    channel: Channel, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.worker_channel.endpoint"):
        async with _endpoint(channel) as (endpoint, worker):
            link = Recorder()
            endpoint.attach(link)
            request_id = endpoint.next_id()
            endpoint.post(link, messages.ping_request(request_id))
            channel.post_completion(b"not a reply")
            worker.post(messages.ok_reply(777))
            worker.post(messages.ping_reply(request_id, 1))
            await until_notified(link.got, lambda: link.replies, "a reply")
            assert [r["id"] for r in link.replies] == [request_id]
    assert "worker 3 sent a reply for an unknown id" in caplog.text
    assert any(r.levelno == logging.ERROR for r in caplog.records)


async def test_a_full_request_ring_is_resource_exhausted(channel: Channel) -> None:
    async with _endpoint(channel) as (endpoint, worker):
        link = Recorder()
        endpoint.attach(link)
        with pytest.raises(ResourceExhausted, match="worker 3 request ring is full"):
            for _ in range(channel.ring_slots + 1):
                endpoint.post(link, messages.ping_request(endpoint.next_id()))
        assert len(worker.requests()) == channel.ring_slots


async def test_close_fails_every_link_once_and_stops_taking_replies(channel: Channel) -> None:
    async with _endpoint(channel) as (endpoint, _worker):
        a, b = Recorder(), Recorder()
        endpoint.attach(a)
        endpoint.attach(b)
        endpoint.open()
        endpoint.post(a, messages.ping_request(endpoint.next_id()))
        error = Unavailable("worker 3 exited (code -9)")
        endpoint.close(error)
        endpoint.close(Unavailable("again"))  # idempotent
        assert a.failed == [error] and b.failed == [error]
        assert not endpoint.alive and channel.closed


async def test_a_closed_endpoint_is_never_alive_again_and_posts_nothing(channel: Channel) -> None:
    """The worker's exit seen before its ready report was acted on left the
    endpoint marked alive over a released channel; every later request raised ValueError."""

    async with _endpoint(channel) as (endpoint, _worker):
        link = Recorder()
        endpoint.attach(link)
        endpoint.close(Unavailable("worker 3 exited (code 0)"))
        with pytest.raises(Unavailable, match=r"^worker 3 exited \(code 0\)$"):
            endpoint.open()
        assert not endpoint.alive
        with pytest.raises(Unavailable, match=r"^worker 3 exited \(code 0\)$"):
            endpoint.post(link, messages.ping_request(endpoint.next_id()))


async def test_a_loop_turn_of_posts_rings_the_sleeping_worker_once_at_its_end(
    channel: Channel,
) -> None:
    """One doorbell per loop turn: the posts of a turn leave together, and the worker is not
    woken (on a shared core: given the CPU) in the middle of the turn."""

    async with _endpoint(channel) as (endpoint, _worker):
        endpoint.open()
        link = Recorder()
        endpoint.attach(link)
        assert channel.wait_submissions(0) == []
        asleep = asyncio.get_running_loop().run_in_executor(None, channel.wait_submissions, None)
        await asyncio.to_thread(_until_asleep, channel)  # the worker's end announces its sleep
        for _ in range(3):
            endpoint.post(link, messages.ping_request(endpoint.next_id()))
        assert channel.worker_sleeps, "rung in the middle of the turn"
        requests = await asyncio.wait_for(asleep, WAIT_S)  # rung once the turn ended
        assert len(requests) == 3  # one wake-up took the whole turn's posts


def _until_asleep(channel: Channel) -> None:
    until(lambda: channel.worker_sleeps, "the worker's end sleeping")
