"""ModelInferResponse written as wire bytes: byte for byte what the message would serialize to."""

from __future__ import annotations

import numpy as np
import pytest

from gateway._pb.inference.grpc_service_pb2 import ModelInferResponse
from gateway.v2 import grpc_infer, response_wire

OUTPUTS = {
    "f": np.arange(6, dtype=np.float32).reshape(2, 3),
    "i": np.array([[-1], [2**40]], dtype=np.int64),
    "b": np.array([True, False]),
    "s": np.array([b"ab", b"", "\u00e9".encode()], dtype=object),
    "h": np.zeros((0, 4), np.float16),
    "scalar": np.array(3.5, np.float64),
}


@pytest.mark.parametrize("request_id", ["", "call-7"])
def test_bytes_equal_the_serialized_message(request_id: str) -> None:
    encoded = response_wire.infer_response("m", 12, request_id, OUTPUTS)
    message = grpc_infer.infer_response("m", 12, request_id, OUTPUTS)
    assert encoded == message.SerializeToString()
    parsed = ModelInferResponse.FromString(encoded)
    assert [o.name for o in parsed.outputs] == list(OUTPUTS)
    assert list(parsed.outputs[0].shape) == [2, 3]
