"""The gRPC streams a client may hold open on tensorgate's own services, ended after a bound.

grpc core closes a connection that stays idle for ``grpc.max_connection_idle_ms``
(``--grpc_idle_timeout_seconds``), but a connection with an open stream is never idle: a client
holding only a grpc.health.v1 ``Watch`` or a reflection stream would hold its connection slot
(of ``--grpc_max_connections``) for good. Both end, OK, after ``stream_s`` seconds: a watch with
the status it last sent, a reflection stream once no request arrives in time. Clients call
again (grpc's own health-checking client does).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any

from grpc_health.v1 import health, health_pb2
from grpc_reflection.v1alpha import reflection


class BoundedHealth(health.aio.HealthServicer):  # type: ignore[misc]
    """grpc.health.v1 whose ``Watch`` streams end after ``stream_s`` seconds."""

    def __init__(self, stream_s: float) -> None:
        super().__init__()
        self._stream_s = stream_s

    async def Watch(self, request: health_pb2.HealthCheckRequest, context: Any) -> None:
        try:
            async with asyncio.timeout(self._stream_s):
                await super().Watch(request, context)
        except TimeoutError:
            return


class BoundedReflection(reflection.aio.ReflectionServicer):  # type: ignore[misc]
    """Server reflection whose streams end ``stream_s`` seconds after they open (the requests
    answered by then are answered)."""

    def __init__(self, service_names: Iterable[str], stream_s: float) -> None:
        super().__init__(tuple(service_names))
        self._stream_s = stream_s

    async def ServerReflectionInfo(
        self, request_iterator: AsyncIterable[Any], context: Any
    ) -> AsyncIterator[Any]:
        requests = until(request_iterator, asyncio.get_running_loop().time() + self._stream_s)
        async for answer in super().ServerReflectionInfo(requests, context):
            yield answer


async def until(items: AsyncIterable[Any], deadline: float) -> AsyncIterator[Any]:
    """``items`` until they end or ``deadline`` (``loop.time()`` seconds) passes while one is
    awaited."""
    iterator = aiter(items)
    while True:
        try:
            async with asyncio.timeout_at(deadline):
                item = await anext(iterator)
        except (TimeoutError, StopAsyncIteration):
            return
        yield item
