"""Dispatcher: least-loaded choice, the per-worker cap, capacity callbacks, and what the
supervisor tells the run side (attach, route, unroute, hung)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from channel.shm.channel import Channel
from gateway.errors import Unavailable
from gateway.runs.dispatcher import Dispatcher
from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_channel.watchdog import HangPolicy
from tests.support.fakes import fake_dispatcher


def test_least_loaded_live_worker_is_chosen() -> None:
    dispatcher, (a, b, c) = fake_dispatcher(3, max_in_flight=4)
    a.runs_in_flight, b.runs_in_flight, c.runs_in_flight = 2, 1, 0
    c.alive = False
    assert dispatcher.pick("m:1") is b
    b.routed = set()
    assert dispatcher.pick("m:1") is a


def test_cap_then_none_and_capacity_callback_once() -> None:
    dispatcher, (a,) = fake_dispatcher(1, max_in_flight=2)
    a.runs_in_flight = 2
    assert dispatcher.pick("m:1") is None
    calls: list[str] = []
    dispatcher.on_capacity(lambda: calls.append("first"))
    listener = lambda: calls.append("second")  # noqa: E731
    dispatcher.on_capacity(listener)
    dispatcher.on_capacity(listener)  # idempotent
    a.runs_in_flight = 1
    a.on_run_done()  # type: ignore[misc]
    assert calls == ["first", "second"]
    dispatcher.wake()
    assert calls == ["first", "second"]  # each registration is called once
    assert dispatcher.pick("m:1") is a


def test_no_live_worker_hosting_the_key_is_unavailable() -> None:
    dispatcher, (a,) = fake_dispatcher(1)
    with pytest.raises(Unavailable, match="no worker"):
        dispatcher.pick("other:1")
    a.alive = False
    with pytest.raises(Unavailable):
        dispatcher.pick("m:1")


def test_cap_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_in_flight must be >= 1, got 0"):
        fake_dispatcher(1, max_in_flight=0)


# -- what the supervisor tells the run side -----------------------------------------------------
async def test_attach_makes_the_run_link_of_a_worker_channel_replacing_the_retired_one() -> None:
    loop = asyncio.get_running_loop()
    dispatcher = Dispatcher()
    channels = [Channel.create(index=0, input_bytes=1 << 12, output_bytes=1 << 12)]
    channels.append(Channel.create(index=0, input_bytes=1 << 12, output_bytes=1 << 12))
    old = dispatcher.attach(Endpoint(0, channels[0], loop))
    old.endpoint.open()
    dispatcher.route(0, "m:1")
    assert dispatcher.pick("m:1") is old
    old.endpoint.close(Unavailable("worker 0 exited (code -9)"))
    new = dispatcher.attach(Endpoint(0, channels[1], loop))
    new.endpoint.open()
    assert dispatcher.links == [new] and new.routed == set()  # routed once warm again
    with pytest.raises(Unavailable):
        dispatcher.pick("m:1")
    new.endpoint.close(Unavailable("test over"))


def test_route_and_unroute_decide_where_a_key_goes_and_routing_wakes_the_waiting() -> None:
    dispatcher, (a, b) = fake_dispatcher(2, max_in_flight=4)
    a.routed, b.routed = set(), set()
    woken: list[str] = []
    dispatcher.on_capacity(lambda: woken.append("woken"))
    dispatcher.route(1, "m:2")
    assert woken == ["woken"] and b.routed == {"m:2"} and a.routed == set()
    assert dispatcher.pick("m:2") is b
    dispatcher.unroute(1, "m:2")
    with pytest.raises(Unavailable, match="no worker is serving m:2"):
        dispatcher.pick("m:2")


async def test_hung_names_live_workers_whose_run_computed_past_the_limit() -> None:
    dispatcher, (a, b) = fake_dispatcher(2, max_in_flight=4)
    policy = HangPolicy(min_s=2.0, factor=10.0)
    assert dispatcher.hung(policy, now=100.0) == []  # nothing running
    for link in (a, b):
        layout = {"x": (np.dtype(np.float32), (3, 2))}
        link.submit("m:1", layout, lambda name, dest: None, None, None)
    assert dispatcher.hung(policy, now=100.0) == []  # m:1 never timed: left to the ping
    dispatcher.run_times.record("m:1", rows=3, seconds=0.01)
    b.alive = False
    assert dispatcher.hung(policy, now=1.0) == []  # computing 1 s: within the 2 s minimum
    assert dispatcher.hung(policy, now=100.0) == [
        (0, "worker 0 stopped answering: a run of m:1 (3 rows) computed for over 2.0 s")
    ]
