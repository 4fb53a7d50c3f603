"""bench.load.transports: gRPC status names as ghz (Go) prints them."""

from __future__ import annotations

import grpc
import pytest

from bench.load.transports import go_code_name


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (grpc.StatusCode.OK, "OK"),
        (grpc.StatusCode.CANCELLED, "Canceled"),
        (grpc.StatusCode.DEADLINE_EXCEEDED, "DeadlineExceeded"),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, "ResourceExhausted"),
        (grpc.StatusCode.UNAVAILABLE, "Unavailable"),
    ],
)
def test_status_names_are_go_s(code: grpc.StatusCode, name: str) -> None:
    assert go_code_name(code) == name
