"""The primitives of the channel's binary layouts (:mod:`channel.wire`, :mod:`channel.span_wire`):
UTF-8 strings with a uint16 length before them, and a bounds-checked :class:`Reader` that raises
:class:`Malformed` for bytes that do not parse. All integers are little-endian.
"""

from __future__ import annotations

import struct
from typing import Any, Final

LEN: Final = struct.Struct("<H")
"""The length before a string, in bytes."""


class Malformed(ValueError):
    """Bytes that do not hold a message of this layout; ``request_id`` is -1 until read."""

    def __init__(self, request_id: int, message: str) -> None:
        super().__init__(message)
        self.request_id = request_id


def write_str(out: list[bytes], text: str) -> None:
    """Append ``text`` to ``out``: its UTF-8 length (uint16), then its bytes. struct.error for a
    string over 65535 bytes."""
    data = text.encode()
    out.append(LEN.pack(len(data)))
    out.append(data)


class Reader:
    """Reads ``data`` from the start; every method raises :class:`Malformed` (naming
    ``request_id``, once known) for bytes that are not there or do not parse."""

    def __init__(self, data: bytes, request_id: int = -1) -> None:
        self.data = data
        self.at = 0
        self.request_id = request_id

    def unpack(self, layout: struct.Struct) -> tuple[Any, ...]:
        try:
            values = layout.unpack_from(self.data, self.at)
        except struct.error:
            raise Malformed(self.request_id, "truncated binary message") from None
        self.at += layout.size
        return values

    def take(self, length: int) -> bytes:
        end = self.at + length
        if end > len(self.data):
            raise Malformed(self.request_id, "truncated binary message")
        data = self.data[self.at : end]
        self.at = end
        return data

    def text(self) -> str:
        """A string :func:`write_str` wrote."""
        (length,) = self.unpack(LEN)
        try:
            return self.take(length).decode()
        except UnicodeDecodeError:
            raise Malformed(self.request_id, "a string is not UTF-8") from None

    def header(self, layout: struct.Struct, tag: int, what: str) -> tuple[Any, ...]:
        """The fixed header (``layout``: tag, id, then the rest); Malformed unless its tag is
        ``tag``. Later errors name the id."""
        fields = self.unpack(layout)
        if fields[0] != tag:
            raise Malformed(-1, f"not a {what} (tag {fields[0]})")
        self.request_id = fields[1]
        return fields[2:]

    def end(self) -> None:
        """Malformed unless every byte has been read."""
        if self.at != len(self.data):
            raise Malformed(self.request_id, "trailing bytes after a binary message")
