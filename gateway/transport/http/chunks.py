"""Declared chunk sizes of chunked REST bodies, read off the raw byte stream.

aiohttp's HTTP parser accepts any chunk size that fits in 64 bits and then waits for that many
bytes, so a body declaring ``ffffffffffffffff`` would hold its connection until the body deadline.
The parser does not expose the declared size, so :class:`ChunkWatch` follows the HTTP/1.1
message framing of one connection alongside it: request heads (to learn each body's framing),
``Content-Length`` bodies (skipped) and chunked bodies (every chunk-size line read).
:meth:`ChunkWatch.feed` returns the first declared chunk size above the limit, before that chunk's
bytes are handed to the parser.

The watch only reads; it never decides what is valid HTTP. Anything it does not follow (a head
over :data:`MAX_HEAD_BYTES`, an unparsable length or chunk-size line, an upgrade) makes it stop
watching the connection, and aiohttp's parser answers as it always does.
"""

from __future__ import annotations

import enum

MAX_HEAD_BYTES = 256 * 1024
"""Longest request head followed (aiohttp refuses far shorter ones: 8190 bytes a line)."""
MAX_LINE_BYTES = 4096
"""Longest chunk-size or trailer line followed."""
_HEX = b"0123456789abcdefABCDEF"


class _State(enum.Enum):
    HEAD = enum.auto()
    LENGTH = enum.auto()  # skipping a Content-Length body
    SIZE = enum.auto()  # reading a chunk-size line
    DATA = enum.auto()  # skipping a chunk's data
    DATA_END = enum.auto()  # skipping the CRLF after a chunk's data
    TRAILER = enum.auto()  # reading trailer lines up to the empty one
    OFF = enum.auto()  # not following this connection any more


class ChunkWatch:
    """Follows one connection's request framing; see the module docstring."""

    def __init__(self, max_chunk_bytes: int) -> None:
        self.max_chunk_bytes = max_chunk_bytes
        self._state = _State.HEAD
        self._buffer = b""
        self._left = 0

    @property
    def following(self) -> bool:
        """False once the watch has given up on this connection."""
        return self._state is not _State.OFF

    def feed(self, data: bytes) -> int | None:
        """Account for ``data`` (the connection's next bytes); the first declared chunk size
        over ``max_chunk_bytes`` in it, else None."""
        pos = 0
        while pos < len(data) and self._state is not _State.OFF:
            if self._state in (_State.LENGTH, _State.DATA, _State.DATA_END):
                taken = min(self._left, len(data) - pos)
                pos += taken
                self._left -= taken
                if not self._left:
                    self._after_skip()
                continue
            unit, pos = self._next_unit(data, pos)
            if unit is None:
                continue
            if self._state is _State.HEAD:
                self._on_head(unit)
            elif self._state is _State.SIZE:
                found = self._on_size_line(unit)
                if found is not None:
                    return found
            elif not unit:  # the empty line that ends the trailers
                self._state = _State.HEAD
        return None

    def _after_skip(self) -> None:
        if self._state is _State.DATA:
            self._state, self._left = _State.DATA_END, 2
        elif self._state is _State.DATA_END:
            self._state = _State.SIZE
        else:
            self._state = _State.HEAD

    def _next_unit(self, data: bytes, pos: int) -> tuple[bytes | None, int]:
        """The head (HEAD) or line (SIZE, TRAILER) ending in ``data`` at or after ``pos``, and
        the position after its end mark; ``(None, len(data))`` when it does not end there yet
        (the start is kept, up to the state's limit)."""
        mark = b"\r\n\r\n" if self._state is _State.HEAD else b"\r\n"
        limit = MAX_HEAD_BYTES if self._state is _State.HEAD else MAX_LINE_BYTES
        if not self._buffer:
            end = data.find(mark, pos, pos + limit + len(mark))
            if end >= 0:
                return data[pos:end], end + len(mark)
        else:
            kept = len(self._buffer)
            joined = self._buffer + data[pos : pos + limit + len(mark)]
            end = joined.find(mark, max(kept - len(mark) + 1, 0))
            if end >= 0:
                self._buffer = b""
                return joined[:end], pos + end + len(mark) - kept
        if len(self._buffer) + len(data) - pos > limit:
            self._stop()
        else:
            self._buffer += data[pos:]
        return None, len(data)

    def _on_head(self, head: bytes) -> None:
        if not head:  # a stray CRLF between requests
            return
        fields = head.lower()
        if b"\r\nupgrade:" in fields:
            self._stop()
            return
        coding = _field(fields, b"\r\ntransfer-encoding:")
        if coding is not None and coding.endswith(b"chunked"):
            self._state = _State.SIZE
            return
        length = _field(fields, b"\r\ncontent-length:")
        if length is None:
            return
        if not length.isdigit():
            self._stop()
        elif int(length):
            self._state, self._left = _State.LENGTH, int(length)

    def _on_size_line(self, line: bytes) -> int | None:
        digits = line.partition(b";")[0].strip()
        if not digits or digits.strip(_HEX):
            self._stop()
            return None
        size = int(digits, 16)
        if size > self.max_chunk_bytes:
            self._stop()
            return size
        if size:
            self._state, self._left = _State.DATA, size
        else:
            self._state = _State.TRAILER
        return None

    def _stop(self) -> None:
        self._state, self._buffer = _State.OFF, b""


def _field(fields: bytes, name: bytes) -> bytes | None:
    """The stripped value of the header ``name`` (lower case, with its leading CRLF and colon)
    in the lower-cased head ``fields``; None when absent."""
    at = fields.find(name)
    if at < 0:
        return None
    start = at + len(name)
    end = fields.find(b"\r\n", start)
    return fields[start : end if end >= 0 else len(fields)].strip()
