"""Typed messages with file descriptors over a Unix stream socket: how channels change hands.

A worker's shared-memory channel is four descriptors (:attr:`channel.shm.channel.Channel.fds`);
a channel made after a process started reaches it over a Unix socket, the descriptors riding as
``SCM_RIGHTS`` with the message that names them. The same framing carries the supervisor's
messages to and from each front end (JSON, off the hot path). A frame is::

    [uint32 payload bytes][uint16 descriptor count][payload: one JSON object, UTF-8]

sent with one ``sendmsg`` whose ancillary data holds the descriptors. On a stream socket the
descriptors arrive with the first byte of that ``sendmsg``, so never after the frame's header:
:class:`Decoder` queues every descriptor received and gives each complete frame the next
``count`` of them, in order. Nothing here owns a descriptor it has handed out; the decoder closes
those it still holds when closed.

Imports neither side, nor grpc, nor protobuf.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

HEADER: Final = struct.Struct("<IH")
MAX_PAYLOAD_BYTES: Final = 256 * 1024 * 1024
"""A frame announcing more is a broken peer (a registry snapshot is kilobytes)."""
MAX_FDS: Final = 64
"""Most descriptors one frame may carry (and one read may receive)."""
READ_BYTES: Final = 1 << 16

Message = dict[str, Any]


class HandoverError(Exception):
    """The peer broke the framing (oversized frame, truncated descriptors, bad JSON)."""


def frame(message: Mapping[str, Any], fds: int = 0) -> bytes:
    """``message`` framed, announcing ``fds`` descriptors (sent with it by :func:`send`)."""
    if not 0 <= fds <= MAX_FDS:
        raise ValueError(f"a frame carries 0 to {MAX_FDS} descriptors, got {fds}")
    payload = json.dumps(message, separators=(",", ":")).encode()
    return HEADER.pack(len(payload), fds) + payload


class Decoder:
    """Bytes and descriptors in, complete ``(message, descriptors)`` frames out, in order."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._fds: deque[int] = deque()

    def feed(self, data: bytes, fds: Sequence[int] = ()) -> None:
        """What one read returned (the decoder owns ``fds`` from here on)."""
        self._buffer += data
        self._fds.extend(fds)

    def frames(self) -> Iterator[tuple[Message, list[int]]]:
        """Every complete frame fed so far; the caller owns each frame's descriptors.
        HandoverError for a broken frame (the stream cannot be resynchronised)."""
        while len(self._buffer) >= HEADER.size:
            size, count = HEADER.unpack_from(self._buffer)
            if size > MAX_PAYLOAD_BYTES or count > MAX_FDS:
                raise HandoverError(f"frame of {size} bytes and {count} descriptors refused")
            end = HEADER.size + size
            if len(self._buffer) < end:
                return
            if len(self._fds) < count:
                raise HandoverError(f"frame announces {count} descriptors, {len(self._fds)} came")
            payload = bytes(self._buffer[HEADER.size : end])
            del self._buffer[:end]
            fds = [self._fds.popleft() for _ in range(count)]
            try:
                message = json.loads(payload)
            except ValueError as exc:
                close_all(fds)
                raise HandoverError(f"frame is not JSON: {exc}") from None
            if not isinstance(message, dict):
                close_all(fds)
                raise HandoverError("frame is not a JSON object")
            yield message, fds

    def close(self) -> None:
        """Close the descriptors received and not yet handed out."""
        close_all(self._fds)
        self._fds.clear()


def receive(sock: socket.socket, decoder: Decoder) -> bool:
    """One read from ``sock`` into ``decoder``; False at end of stream. Raises BlockingIOError
    when a non-blocking socket has nothing, HandoverError when descriptors were truncated."""
    data, fds, flags, _ = socket.recv_fds(sock, READ_BYTES, MAX_FDS)
    if flags & socket.MSG_CTRUNC:
        close_all(fds)
        raise HandoverError("descriptors truncated in transit")
    decoder.feed(data, fds)
    return bool(data)


def send(sock: socket.socket, message: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
    """Send one frame with ``fds`` on a blocking socket (the caller keeps its descriptors)."""
    data = memoryview(frame(message, len(fds)))
    sent = socket.send_fds(sock, [data], list(fds)) if fds else sock.send(data)
    if sent < len(data):
        sock.sendall(data[sent:])


def close_all(fds: Iterator[int] | Sequence[int] | deque[int]) -> None:
    """Close each descriptor, ignoring those already closed."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
