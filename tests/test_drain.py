"""The drain on SIGTERM/SIGINT: readiness first, then refusals while running calls finish, within
the grace or until a second signal. The surfaces are fakes at their one seam (``Surface``);
signals are real."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from typing import Any

import pytest

from gateway.drain import STOP_SIGNALS, Signals, drain, shut_down
from tests.support.idle_loop import settle

WAIT_S = 30.0
"""A grace no test reaches when things work."""


class _Surface:
    """A server whose calls finish when :attr:`idle` is set; records the order of events."""

    def __init__(self, events: list[str], last_arrival: float = 0.0) -> None:
        self.events = events
        self.idle = asyncio.Event()
        self.last_arrival = last_arrival

    def start_draining(self) -> None:
        self.events.append("draining")

    async def wait_idle(self) -> None:
        await self.idle.wait()


async def _not_ready(events: list[str]) -> None:
    events.append("not ready")


async def test_readiness_goes_first_then_every_surface_drains_and_finishes() -> None:
    events: list[str] = []
    surfaces: list[Any] = [_Surface(events), _Surface(events)]
    task = asyncio.create_task(
        drain(
            surfaces,
            not_ready=lambda: _not_ready(events),
            grace_s=WAIT_S,
            hurry=asyncio.Event(),
            quiet_s=0.0,
        )
    )
    await settle()
    assert not task.done()  # the calls are still running
    for surface in surfaces:
        surface.idle.set()
    finished = await task
    assert finished
    assert events == ["not ready", "draining", "draining"]


async def test_a_second_signal_stops_waiting_for_running_calls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.drain"):
        before = asyncio.all_tasks()
        hurry = asyncio.Event()
        task = asyncio.create_task(
            drain(
                [_Surface([])],
                not_ready=lambda: _not_ready([]),
                grace_s=WAIT_S,
                hurry=hurry,
            )
        )
        await settle()
        assert not task.done()
        hurry.set()
        finished = await task
        assert asyncio.all_tasks() == before  # nothing of the drain is left running
        assert not finished
    assert "calls still running after the drain" in caplog.text


async def test_the_grace_bounds_the_wait() -> None:
    assert not await drain(
        [_Surface([])],
        not_ready=lambda: _not_ready([]),
        grace_s=0.0,
        hurry=asyncio.Event(),
    )


async def test_listeners_stay_open_while_calls_keep_arriving() -> None:
    surface = _Surface([], last_arrival=time.monotonic())
    surface.idle.set()  # nothing runs, but a call just arrived
    hurry = asyncio.Event()
    task = asyncio.create_task(
        drain(
            [surface],
            not_ready=lambda: _not_ready([]),
            grace_s=WAIT_S,
            hurry=hurry,
            quiet_s=WAIT_S,
        )
    )
    await settle()
    assert not task.done()  # waiting for quiet, refusing
    hurry.set()
    assert await task  # every call had finished: a clean drain


async def test_the_first_signal_stops_the_second_hurries(caplog: pytest.LogCaptureFixture) -> None:
    signals = Signals()
    with caplog.at_level(logging.INFO, logger="gateway.drain"):
        signals.received()
        assert signals.stop.is_set() and not signals.hurry.is_set()
        signals.received()
        signals.received()
    assert signals.hurry.is_set()
    assert caplog.text.count("stop signal: draining") == 1
    assert caplog.text.count("second stop signal") == 1  # said once, however many follow


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)
async def test_installed_handlers_turn_a_real_signal_into_stop(signum: int) -> None:
    signals = Signals()
    loop = asyncio.get_running_loop()
    signals.install()
    try:
        os.kill(os.getpid(), signum)
        await asyncio.wait_for(signals.stop.wait(), WAIT_S)
        assert not signals.hurry.is_set()
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)


class _Holding:
    """A gRPC gate as the shutdown sees it: when the latest call arrived (``busy``: a new one
    at every look), refusals held or not."""

    def __init__(self, events: list[str], *, busy: bool = False) -> None:
        self.events = events
        self.busy = busy
        self._last = 0.0

    @property
    def last_arrival(self) -> float:
        if self.busy:
            self._last += 1.0
        return self._last

    def hold_refusals(self) -> None:
        self.events.append("hold")

    def release_refusals(self) -> None:
        self.events.append("release")


async def test_refusals_are_held_until_the_servers_shutdown_has_begun() -> None:
    """A call that reached grpc but not its handler when the shutdown begins is cancelled by
    grpc: refusals are held (no client sends another call) before the stop, answered after."""

    events: list[str] = []
    holding = _Holding(events)  # no call arrives

    async def stop() -> None:
        events.append("shutdown begins")
        await asyncio.sleep(0)
        events.append("stopped")

    await shut_down(holding, [stop()], hurry=asyncio.Event(), hold_s=WAIT_S, quiet_s=0.1)
    assert events == ["hold", "shutdown begins", "release", "stopped"]


async def test_the_hold_waits_for_arrivals_to_stop_within_its_bound_and_not_on_hurry() -> None:
    events: list[str] = []
    holding = _Holding(events, busy=True)  # calls keep coming
    hurry = asyncio.Event()

    async def stop() -> None:
        events.append("shutdown begins")

    task = asyncio.create_task(shut_down(holding, [stop()], hurry=hurry, hold_s=WAIT_S))
    await settle()
    assert events == ["hold"]  # not yet: calls still arrive
    hurry.set()
    await task
    assert events == ["hold", "shutdown begins", "release"]
    events.clear()
    await shut_down(holding, [stop()], hurry=hurry)  # hurried from the start: no hold
    assert events == ["shutdown begins", "release"]


async def test_with_others_on_the_ports_the_refusals_wait_until_they_shut_down_too() -> None:
    events: list[str] = []
    holding = _Holding(events)
    others, finish = asyncio.Event(), asyncio.Event()

    async def stop() -> None:
        events.append("shutdown begins")
        await finish.wait()  # the calls still held keep the server from stopping
        events.append("stopped")

    async def together() -> None:
        events.append("waiting for the others")
        await others.wait()

    task = asyncio.create_task(
        shut_down(holding, [stop()], hurry=asyncio.Event(), together=together, quiet_s=0.1)
    )
    for _ in range(3000):  # bounded: the hold's quiet polls pass
        if len(events) == 3:
            break
        await asyncio.sleep(0.01)
    assert events == ["hold", "shutdown begins", "waiting for the others"]
    others.set()
    await settle()
    finish.set()
    await task
    assert events[3:] == ["release", "stopped"]
