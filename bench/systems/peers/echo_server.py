"""The transport ceiling: a bare grpc.aio server (uvloop) that echoes each request's bytes.

Serves every unary method (``/tensorflow.serving.PredictionService/Predict`` included) with no
parsing: the request bytes are the response (with ``--answer_bytes=N``, N bytes made for each
call instead, written so that they are resident: a bare server's large answers). Usage::

    python -m bench.systems.peers.echo_server --port=0 --ready_fd=N

writes ``{"pid": ..., "grpc_port": ...}`` to fd N when serving; stops on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from typing import Any

import grpc
import uvloop


async def _echo(request: bytes, context: Any) -> bytes:
    return request


class _EchoHandler(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self, answer_bytes: int = 0) -> None:
        async def answer(request: bytes, context: Any) -> bytes:
            return b"\x01" * answer_bytes

        self._behaviour = answer if answer_bytes else _echo

    def service(self, handler_call_details: Any) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(self._behaviour)


async def serve(port: int, ready_fd: int, answer_bytes: int = 0) -> None:
    server = grpc.aio.server(
        options=[
            ("grpc.so_reuseport", 0),
            ("grpc.max_receive_message_length", 256 * 1024 * 1024),
            ("grpc.max_send_message_length", 256 * 1024 * 1024),
        ]
    )
    server.add_generic_rpc_handlers((_EchoHandler(answer_bytes),))
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready_fd >= 0:
        with os.fdopen(ready_fd, "w") as out:
            out.write(json.dumps({"pid": os.getpid(), "grpc_port": bound}) + "\n")
    await stop.wait()
    await server.stop(1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ready_fd", type=int, default=-1)
    parser.add_argument("--answer_bytes", type=int, default=0, help="answer this many bytes")
    args = parser.parse_args()
    uvloop.run(serve(args.port, args.ready_fd, args.answer_bytes))


if __name__ == "__main__":
    main()
