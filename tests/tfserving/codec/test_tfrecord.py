"""TFRecord framing: records round-trip, damage is DATA_LOSS as TensorFlow's RecordReader says."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors import Code, ServingError
from gateway.tfserving.codec.tfrecord import frame_record, masked_crc32c, read_records


def test_masked_crc32c_is_tensorflows() -> None:
    # CRC32C("123456789") = 0xE3069283 (RFC 3720's check value), then TFRecord's mask.
    crc = 0xE3069283
    assert masked_crc32c(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


@given(st.lists(st.binary(max_size=300), max_size=8))
def test_records_round_trip(records: list[bytes]) -> None:
    data = b"".join(frame_record(r) for r in records)
    assert list(read_records(io.BytesIO(data))) == records


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[:5], "truncated record at 0"),
        (lambda d: d[:-1], "truncated record at 0"),
        (lambda d: d[:3] + b"\xff" + d[4:], "corrupted record at 0"),  # length
        (lambda d: d[:-2] + b"\x00\x00", "corrupted record at 0"),  # data crc
        (lambda d: d + d[:13], "truncated record at 21"),
        (lambda d: b"not a tfrecord file at all", "corrupted record at 0"),
    ],
)
def test_damage_is_data_loss(damage: object, message: str) -> None:
    data = damage(frame_record(b"hello"))  # type: ignore[operator]
    with pytest.raises(ServingError) as info:
        list(read_records(io.BytesIO(data)))
    assert info.value.code == Code.DATA_LOSS
    assert info.value.message == message
