"""Dispatcher: least-loaded choice, the per-worker cap, and capacity callbacks."""

from __future__ import annotations

import pytest

from gateway.errors import Unavailable
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
