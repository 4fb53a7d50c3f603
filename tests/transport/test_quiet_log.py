"""Throttled log lines: one line per interval, with a count."""

from __future__ import annotations

import logging

import pytest

from gateway.transport.quiet_log import Throttled


def test_one_line_per_interval_with_the_count(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    throttled = Throttled(logging.getLogger("t"), "bad things", interval_s=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="t"):
        throttled("first")
        for i in range(500):
            throttled(f"again {i}")
        now[0] += 60
        throttled("later")
    assert [r.getMessage() for r in caplog.records] == [
        "bad things: first",
        "bad things: 501 in the last 60 s, the latest: later",
    ]
    assert throttled.total == 502
