"""The concurrency window's arithmetic: when an open batch of a zero-timeout queue is held."""

from __future__ import annotations

import pytest

from gateway.batching.window import OVERLAP_THRESHOLD, WINDOW_S, ConcurrencyWindow


def concurrent_window() -> ConcurrencyWindow:
    window = ConcurrencyWindow()
    while not window.concurrent:
        window.arrival(2)
    return window


def test_a_client_at_a_time_never_opens_the_window() -> None:
    window = ConcurrencyWindow()
    for _ in range(1000):
        window.arrival(1)
    assert not window.concurrent
    assert window.hold_until(opened_at=10.0, send_by=None, now=10.0) is None


def test_a_short_burst_does_not_open_it_a_sustained_overlap_does() -> None:
    window = ConcurrencyWindow()
    for _ in range(5):
        window.arrival(2)
    assert not window.concurrent  # a burst of a few simultaneous requests goes at once
    arrivals = 5
    while not window.concurrent:
        window.arrival(2)
        arrivals += 1
    assert arrivals <= 8
    assert window.overlap > OVERLAP_THRESHOLD


def test_it_closes_again_once_arrivals_stop_finding_company() -> None:
    window = concurrent_window()
    for _ in range(100):
        window.arrival(2)
    closed_after = 0
    while window.concurrent:
        window.arrival(1)
        closed_after += 1
    assert 10 <= closed_after <= 40


def test_an_open_batch_is_held_until_the_window_ends() -> None:
    window = concurrent_window()
    assert window.hold_until(opened_at=10.0, send_by=None, now=10.0) == pytest.approx(
        10.0 + WINDOW_S
    )
    assert window.hold_until(opened_at=10.0, send_by=None, now=10.0 + WINDOW_S) is None


def test_a_deadline_shortens_the_hold() -> None:
    window = concurrent_window()
    until = window.hold_until(opened_at=10.0, send_by=10.0 + WINDOW_S / 4, now=10.0)
    assert until == pytest.approx(10.0 + WINDOW_S / 4)
    assert window.hold_until(opened_at=10.0, send_by=9.0, now=10.0) is None  # already due


def test_a_batch_holding_every_caller_seen_lately_goes_at_once() -> None:
    """Four closed-loop clients: once the open batch (with what runs) holds four, nobody else can
    join it, so it is not held for company."""
    window = concurrent_window()
    for present in (1, 2, 3, 4) * 10:
        window.arrival(present)
    assert window.hold_until(opened_at=10.0, send_by=None, now=10.0, present=3) == pytest.approx(
        10.0 + WINDOW_S
    )
    assert window.hold_until(opened_at=10.0, send_by=None, now=10.0, present=4) is None


def test_the_peak_follows_the_callers_down() -> None:
    window = concurrent_window()
    window.arrival(64)
    arrivals = 0
    while window.peak > 4:
        window.arrival(4)
        arrivals += 1
    assert arrivals <= 150
    assert window.hold_until(opened_at=10.0, send_by=None, now=10.0, present=4) is None
