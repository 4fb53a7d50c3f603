"""How the load generator sends one request: gRPC (grpc.aio, raw bytes) or HTTP (aiohttp).

A pool holds ``connections`` connections (gRPC: one channel each with its own subchannel pool, so
they really are separate TCP connections; HTTP/1.1: a keep-alive connection limit) and exposes one
sender per connection. Status names are ghz's: gRPC codes as Go prints them (``OK``,
``Unavailable``, ``DeadlineExceeded``...); HTTP answers as ``OK`` (2xx) or ``HTTP <code>``.
A REST transport for tensorgate's TF Serving REST API plugs in here as another ``http`` target
(URL path + JSON body); nothing else in the generator knows the protocol.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
CONNECT_TIMEOUT_S = 15.0

_GO_NAMES = {"CANCELLED": "Canceled", "OK": "OK"}


def go_code_name(code: grpc.StatusCode) -> str:
    """``grpc.StatusCode.DEADLINE_EXCEEDED`` → ``DeadlineExceeded`` (ghz's spelling)."""
    name: str = code.name
    return _GO_NAMES.get(name) or "".join(part.capitalize() for part in name.split("_"))


@dataclass
class Pool:
    senders: list[Callable[[], Awaitable[tuple[str, str]]]]
    close: Callable[[], Awaitable[None]]


async def open_pool(options: Any, connections: int) -> Pool:
    """Open ``connections`` connections to ``options.target`` for ``options.transport``."""
    if options.transport == "grpc":
        return await _grpc_pool(options, connections)
    if options.transport == "http":
        return await _http_pool(options, connections)
    raise ValueError(f"unknown transport {options.transport!r} (grpc or http)")


async def _grpc_pool(options: Any, connections: int) -> Pool:
    channel_options = [
        ("grpc.use_local_subchannel_pool", 1),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ]
    channels = [
        grpc.aio.insecure_channel(options.target, options=channel_options)
        for _ in range(max(1, connections))
    ]
    await asyncio.wait_for(
        asyncio.gather(*(ch.channel_ready() for ch in channels)), CONNECT_TIMEOUT_S
    )
    payload: bytes = options.payload
    timeout: float | None = options.timeout_s or None
    metadata = tuple(options.metadata) or None

    def sender(channel: grpc.aio.Channel) -> Callable[[], Awaitable[tuple[str, str]]]:
        call = channel.unary_unary(
            options.method, request_serializer=None, response_deserializer=None
        )

        async def send() -> tuple[str, str]:
            try:
                await call(payload, timeout=timeout, metadata=metadata)
            except grpc.aio.AioRpcError as exc:
                name = go_code_name(exc.code())
                return name, f"rpc error: code = {name} desc = {exc.details()}"
            return "OK", ""

        return send

    async def close() -> None:
        await asyncio.gather(*(ch.close() for ch in channels))

    return Pool([sender(ch) for ch in channels], close)


async def _http_pool(options: Any, connections: int) -> Pool:
    import aiohttp

    limit = max(1, connections)
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit, limit_per_host=limit),
        timeout=aiohttp.ClientTimeout(total=options.timeout_s or None),
    )
    url = options.target.rstrip("/") + options.method
    payload: bytes = options.payload
    headers = {"content-type": options.content_type, **dict(options.metadata)}

    async def send() -> tuple[str, str]:
        try:
            async with session.post(url, data=payload, headers=headers) as resp:
                body = await resp.read()
                if 200 <= resp.status < 300:
                    return "OK", ""
                text = body[:160].decode(errors="replace")
                return f"HTTP {resp.status}", f"HTTP {resp.status}: {text}"
        except TimeoutError:
            return "DeadlineExceeded", "client timeout"
        except aiohttp.ClientError as exc:
            return "Unavailable", f"{type(exc).__name__}: {exc}"

    async def close() -> None:
        await session.close()

    return Pool([send], close)
