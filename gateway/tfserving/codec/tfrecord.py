"""TFRecord files: the container of TF Serving's warmup requests, read without TensorFlow.

Each record is framed as (TensorFlow's ``core/lib/io/record_writer.cc``)::

    uint64 length          little-endian
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

with ``masked(crc) = ((crc >> 15 | crc << 17) + 0xa282ead8) mod 2**32``. CRC32C comes from
``google-crc32c`` (Google's C implementation, with its own pure-Python fallback). Damage is
reported as TensorFlow's ``RecordReader`` reports it: DATA_LOSS "truncated record at N" or
"corrupted record at N" (N: the record's byte offset); a clean end of file ends the records.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO, Final

import google_crc32c

from gateway.errors import Code, ServingError

_MASK_DELTA: Final = 0xA282EAD8
_LENGTH: Final = struct.Struct("<Q")
_CRC: Final = struct.Struct("<I")
HEADER_BYTES: Final = _LENGTH.size + _CRC.size


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC32C of ``data``."""
    crc: int = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame_record(data: bytes) -> bytes:
    """One record as a TFRecord writer frames it (for writing warmup files)."""
    length = _LENGTH.pack(len(data))
    return length + _CRC.pack(masked_crc32c(length)) + data + _CRC.pack(masked_crc32c(data))


def data_loss(message: str) -> ServingError:
    return ServingError(message, Code.DATA_LOSS)


def read_records(stream: BinaryIO) -> Iterator[bytes]:
    """The records of a TFRecord stream, in order; ServingError DATA_LOSS on a damaged one."""
    offset = 0
    while True:
        header = stream.read(HEADER_BYTES)
        if not header:
            return
        if len(header) < HEADER_BYTES:
            raise data_loss(f"truncated record at {offset}")
        (length,) = _LENGTH.unpack_from(header)
        (crc,) = _CRC.unpack_from(header, _LENGTH.size)
        if crc != masked_crc32c(header[: _LENGTH.size]):
            raise data_loss(f"corrupted record at {offset}")
        body = stream.read(length + _CRC.size)
        if len(body) < length + _CRC.size:
            raise data_loss(f"truncated record at {offset}")
        data = body[:length]
        if _CRC.unpack_from(body, length)[0] != masked_crc32c(data):
            raise data_loss(f"corrupted record at {offset}")
        yield data
        offset += HEADER_BYTES + length + _CRC.size
