"""Tensor descriptors as the messages carry them: a TensorDesc's fields are the ones the binary
``run`` encoding keeps, and name where a payload lies in a shared-memory area."""

from __future__ import annotations

import numpy as np

from channel import wire
from channel.descriptors import TensorDesc, WireSignature, WireTensorSpec
from channel.requests import run_request
from channel.shm.payload import read_tensor, tensor_at, tensor_nbytes, write_tensor

DESC = TensorDesc(name="x", dtype="float32", shape=(2, 3), offset=64, nbytes=24)


def test_a_tensor_desc_has_exactly_the_documented_fields() -> None:
    assert TensorDesc._fields == ("name", "dtype", "shape", "offset", "nbytes")
    assert WireTensorSpec.__required_keys__ == {"name", "dtype", "shape"}
    assert WireSignature.__required_keys__ == {"inputs", "outputs"}


def test_a_run_request_s_descs_survive_the_binary_encoding() -> None:
    request = run_request(7, key="m:1", inputs=[DESC])
    (decoded,) = wire.decode_run(wire.encode_run(request)).inputs
    assert decoded == DESC and type(decoded) is TensorDesc


def test_a_desc_names_where_its_payload_lies_in_an_area() -> None:
    area = bytearray(128)
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert tensor_nbytes(array) == DESC.nbytes
    start, end = DESC.offset, DESC.offset + DESC.nbytes
    write_tensor(memoryview(area)[start:end], array)
    read = read_tensor(memoryview(area)[start:end], DESC.dtype, DESC.shape)
    np.testing.assert_array_equal(read, array)
    np.testing.assert_array_equal(tensor_at(memoryview(area), DESC), array)
