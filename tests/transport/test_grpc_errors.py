"""gateway.transport.grpc_errors: a servicer method's failure becomes the call's gRPC status, as
the gate's one wrapper of each method applies it."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from gateway.errors import NotFound
from gateway.transport.gate import Gate


class _Servicer:
    def __init__(self, error: Exception | None) -> None:
        self.error = error

    async def Call(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        if self.error is not None:
            raise self.error
        return request


async def _call(error: Exception | None) -> tuple[grpc.StatusCode, str | None, bytes | None]:
    servicer = _Servicer(error)
    gated = Gate().wrap(
        "t.S", "Call", grpc.unary_unary_rpc_method_handler(servicer.Call), bounded=True
    )
    handler = grpc.method_handlers_generic_handler("t.S", {"Call": gated})
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call: Any = channel.unary_unary("/t.S/Call")
            try:
                return grpc.StatusCode.OK, None, await call(b"x", timeout=30)
            except grpc.aio.AioRpcError as failed:
                return failed.code(), failed.details(), None
    finally:
        await server.stop(None)


@pytest.mark.parametrize(
    ("error", "code", "details"),
    [
        (None, grpc.StatusCode.OK, None),
        (NotFound("no such model"), grpc.StatusCode.NOT_FOUND, "no such model"),
        (RuntimeError("boom"), grpc.StatusCode.INTERNAL, "RuntimeError: boom"),
    ],
    ids=["answered", "serving error", "unexpected"],
)
async def test_a_failure_is_its_canonical_status_and_anything_else_internal(
    error: Exception | None, code: grpc.StatusCode, details: str | None
) -> None:
    got_code, got_details, answer = await _call(error)
    assert (got_code, got_details) == (code, details)
    assert answer == (b"x" if error is None else None)
