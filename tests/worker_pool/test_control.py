"""The control link: the worker's ready message, load before the worker counts as alive, the
other requests only after, replies and errors by id, everything failed when the endpoint closes.
A real channel; the worker's end is played by the test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from channel import messages
from channel.shm.channel import Channel
from gateway.errors import NotFound, Unavailable
from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_pool.control import ControlLink
from tests.support.worker_end import WorkerEnd, resolved


@asynccontextmanager
async def _linked() -> AsyncIterator[tuple[ControlLink, WorkerEnd]]:
    """A control link over a fresh channel, and the worker's end of it played by the test."""
    channel = Channel.create(index=1, input_bytes=1 << 12, output_bytes=1 << 12)
    endpoint = Endpoint(1, channel, asyncio.get_running_loop())
    try:
        yield ControlLink(endpoint, asyncio.get_running_loop()), WorkerEnd(channel)
    finally:
        endpoint.close(Unavailable("test over"))


async def test_ready_then_load_ping_unload_and_stop() -> None:
    async with _linked() as (control, worker):
        worker.post(messages.ready(4321))
        assert (await resolved(control.ready))["pid"] == 4321
        load = control.load(
            key="m:1",
            path="/m/1/model.onnx",
            platform="onnx",
            intra_op=1,
            inter_op=1,
            tags=("serve",),
        )  # allowed before the pool marks the worker alive
        (request,) = worker.requests()
        assert request["op"] == "load" and request["key"] == "m:1"
        worker.post(messages.load_reply(request["id"], {"inputs": [], "outputs": []}))
        assert (await resolved(load))["signature"] == {"inputs": [], "outputs": []}
        control.endpoint.open()
        ping, unload, stop = control.ping("m:1"), control.unload("m:1"), control.stop()
        sent = worker.requests()
        assert [(r["op"], r.get("key")) for r in sent] == [
            ("ping", "m:1"),
            ("unload", "m:1"),
            ("stop", None),
        ]
        worker.post(messages.ok_reply(sent[2]["id"]))
        worker.post(messages.ok_reply(sent[1]["id"]))
        worker.post(messages.ping_reply(sent[0]["id"], 4321, runs=6))
        assert (await resolved(ping))["runs"] == 6
        assert (await resolved(unload))["ok"] and (await resolved(stop))["ok"]


async def test_only_load_is_sent_before_the_worker_counts_as_alive() -> None:
    async with _linked() as (control, worker):
        for call in (control.ping, control.stop, lambda: control.unload("m:1")):
            with pytest.raises(Unavailable, match="worker 1 is not available"):
                call()
        assert worker.requests() == []


async def test_a_worker_error_fails_its_request_with_the_same_code() -> None:
    async with _linked() as (control, worker):
        control.endpoint.open()
        ping = control.ping("gone:1")
        (request,) = worker.requests()
        worker.post(messages.error_reply(request["id"], "NOT_FOUND", "no servable gone:1"))
        with pytest.raises(NotFound, match="no servable gone:1"):
            await resolved(ping)


async def test_closing_the_endpoint_fails_what_is_awaited() -> None:
    async with _linked() as (control, _worker):
        control.endpoint.open()
        ping = control.ping()
        control.endpoint.close(Unavailable("worker 1 exited (code -9)"))
        assert control.ready.done() and ping.done()
        with pytest.raises(Unavailable, match="exited"):
            await ping
        with pytest.raises(Unavailable, match="exited"):
            await control.ready
        assert not control.alive
