"""gRPC spoken by hand over one HTTP/2 connection (the ``h2`` package): a client that does what
grpc's own clients never do — leave its receive window shut, hold streams open by the thousand.

:class:`RawGrpc` opens a TCP connection to ``127.0.0.1``, sends the HTTP/2 preface with its own
``SETTINGS_INITIAL_WINDOW_SIZE`` (``window``: 0 lets the server send headers and trailers but
no answer bytes) and never widens a window past it: the answers it receives are counted and
dropped without a ``WINDOW_UPDATE``, unless ``window`` is the default, when it acknowledges
them (a well-behaved reader of small answers such as health ``Watch`` updates). Each
:meth:`RawGrpc.call` opens one stream (headers, one length-prefixed message, end of stream);
:meth:`RawGrpc.pump` reads what has arrived without blocking and updates each stream's
:class:`Stream`: its response headers, answer bytes, trailers, or reset.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

DEFAULT_WINDOW = 65535
"""HTTP/2's initial stream window (RFC 9113 §6.9.2)."""
STATUS_NAMES = {
    0: "OK",
    1: "CANCELLED",
    2: "UNKNOWN",
    3: "INVALID_ARGUMENT",
    4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND",
    6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED",
    8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION",
    10: "ABORTED",
    11: "OUT_OF_RANGE",
    12: "UNIMPLEMENTED",
    13: "INTERNAL",
    14: "UNAVAILABLE",
    15: "DATA_LOSS",
    16: "UNAUTHENTICATED",
}
"""gRPC status codes by number."""


@dataclass
class Stream:
    """What one call's stream has received so far."""

    headers: dict[str, str] = field(default_factory=dict)
    trailers: dict[str, str] = field(default_factory=dict)
    answer_bytes: int = 0
    reset: int | None = None
    """The RST_STREAM error code, when the server reset the stream."""

    @property
    def state(self) -> str:
        """The call's gRPC status name once it ended; ``held`` when its answer has begun (headers
        in) but not ended; ``waiting`` before any answer; ``reset``."""
        if self.reset is not None:
            return "reset"
        status = self.trailers.get("grpc-status", self.headers.get("grpc-status"))
        if status is not None:
            return STATUS_NAMES.get(int(status), f"status {status}")
        return "held" if self.headers else "waiting"

    @property
    def ended(self) -> bool:
        return self.state not in ("held", "waiting")


def readable(fds: Iterable[int], timeout_s: float) -> list[int]:
    """Those of ``fds`` with bytes to read (or closed), waiting at most ``timeout_s`` for one
    (``poll``: any descriptor number, not only those below 1024)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ in poller.poll(timeout_s * 1000)]


def grpc_message(message: bytes) -> bytes:
    """``message`` in gRPC's length-prefixed framing (not compressed)."""
    return struct.pack(">BI", 0, len(message)) + message


class RawGrpc:
    """One HTTP/2 connection to ``127.0.0.1:port`` (see the module doc)."""

    def __init__(self, port: int, *, window: int = DEFAULT_WINDOW, timeout_s: float = 10.0):
        self.port = port
        self.window = window
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.h2 = h2.connection.H2Connection(config)
        self.h2.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window}
        )
        self.h2.initiate_connection()
        self.streams: dict[int, Stream] = {}
        self.closed = False
        """The server closed the connection or sent GOAWAY."""
        self.sock.settimeout(None)  # sends block (they are small); reads never do (pump)
        self._flush()

    def fileno(self) -> int:
        return self.sock.fileno()

    def call(self, path: str, message: bytes, metadata: Iterable[tuple[str, str]] = ()) -> int:
        """Open a stream calling ``path`` with ``message``; its stream id."""
        stream_id = self.h2.get_next_available_stream_id()
        headers = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", f"127.0.0.1:{self.port}"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            *metadata,
        ]
        self.h2.send_headers(stream_id, headers)
        self.h2.send_data(stream_id, grpc_message(message), end_stream=True)
        self.streams[stream_id] = Stream()
        self._flush()
        return stream_id

    def pump(self) -> bool:
        """Read and handle what has arrived, without blocking; False once the connection is
        closed."""
        while not self.closed:
            try:
                data = self.sock.recv(1 << 16, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.closed = True
                break
            if not data:
                self.closed = True
                break
            try:
                events = self.h2.receive_data(data)
            except h2.exceptions.ProtocolError:
                self.closed = True
                break
            for event in events:
                self._handle(event)
        if not self.closed:
            self._flush()
        return not self.closed

    def wait(self, stream_id: int, timeout_s: float) -> Stream:
        """Pump until ``stream_id`` has an answer (headers, an end or a reset), the connection
        closes or ``timeout_s`` passes; the stream."""
        deadline = time.monotonic() + timeout_s
        stream = self.streams[stream_id]
        while stream.state == "waiting" and self.pump():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            readable([self.sock.fileno()], min(left, 0.05))
        return stream

    def open_window(self, stream_id: int, nbytes: int) -> None:
        """Let the server send ``nbytes`` more of ``stream_id``'s answer (a late reader)."""
        self.h2.increment_flow_control_window(nbytes, stream_id=stream_id)
        self.h2.increment_flow_control_window(nbytes)
        self._flush()

    def close(self) -> None:
        with contextlib.suppress(OSError, h2.exceptions.ProtocolError):
            self.h2.close_connection()
            self.sock.settimeout(1.0)
            self.sock.sendall(self.h2.data_to_send())
        self.sock.close()
        self.closed = True

    def _handle(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.ResponseReceived):
            self._stream(event.stream_id).headers.update(_text(event.headers))
        elif isinstance(event, h2.events.TrailersReceived):
            self._stream(event.stream_id).trailers.update(_text(event.headers))
        elif isinstance(event, h2.events.DataReceived):
            self._stream(event.stream_id).answer_bytes += len(event.data)
            if self.window == DEFAULT_WINDOW and event.flow_controlled_length:
                with contextlib.suppress(h2.exceptions.StreamClosedError):
                    self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            self._stream(event.stream_id).reset = int(event.error_code)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.closed = True

    def _stream(self, stream_id: int | None) -> Stream:
        return self.streams.setdefault(stream_id or 0, Stream())

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if not data:
            return
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed = True


def _text(headers: Iterable[tuple[str | bytes, str | bytes]]) -> dict[str, str]:
    return {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in headers
    }
