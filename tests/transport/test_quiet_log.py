"""Throttled log lines and bearer tokens: the small pieces of the front doors, in process."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gateway.errors import Unauthenticated
from gateway.transport.auth import BearerTokens
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


def test_bearer_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# the team's tokens\nalpha\n\n  beta  \n")
    tokens = BearerTokens.load(str(path), ["/healthz", "/grpc.health.v1.Health/", ""])
    tokens.check("Bearer alpha")
    tokens.check("bearer beta")
    for bad in (None, "Bearer gamma", "Basic alpha", "Bearer", "alpha", "Bearer alph"):
        with pytest.raises(Unauthenticated):
            tokens.check(bad)
    assert tokens.is_open("/healthz") and tokens.is_open("/grpc.health.v1.Health/Check")
    assert not tokens.is_open("/healthz/x") and not tokens.is_open("/v1/models/m")
    path.write_text("# nothing\n\n")
    with pytest.raises(ValueError, match="holds no token"):
        BearerTokens.load(str(path))
