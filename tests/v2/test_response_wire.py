"""ModelInferResponse written as wire bytes: byte for byte what the message would serialize to
(:func:`_protobuf`: the same response built as a message, the oracle)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from gateway._pb.inference.grpc_service_pb2 import ModelInferResponse
from gateway.v2 import datatypes, raw, response_wire, version_strings

OUTPUTS: dict[str, np.ndarray] = {
    "f": np.arange(6, dtype=np.float32).reshape(2, 3),
    "i": np.array([[-1], [2**40]], dtype=np.int64),
    "b": np.array([True, False]),
    "s": np.array([b"ab", b"", "\u00e9".encode()], dtype=object),
    "h": np.zeros((0, 4), np.float16),
    "scalar": np.array(3.5, np.float64),
}


def _protobuf(
    model: str, version: int, request_id: str, outputs: Mapping[str, npt.NDArray[Any]]
) -> bytes:
    """The same response built as a protobuf message (every output's values raw, in order) and
    serialized by protobuf."""
    response = ModelInferResponse(
        model_name=model, model_version=version_strings.version_string(version), id=request_id
    )
    for name, array in outputs.items():
        row = datatypes.for_numpy(array.dtype)
        response.outputs.add(name=name, datatype=row.name, shape=array.shape)
        response.raw_output_contents.append(raw.to_raw(array, row))
    return response.SerializeToString()


@pytest.mark.parametrize("request_id", ["", "call-7"])
def test_bytes_equal_the_serialized_message(request_id: str) -> None:
    encoded = response_wire.infer_response("m", 12, request_id, OUTPUTS)
    assert encoded == _protobuf("m", 12, request_id, OUTPUTS)
    parsed = ModelInferResponse.FromString(encoded)
    assert [o.name for o in parsed.outputs] == list(OUTPUTS)
    assert list(parsed.outputs[0].shape) == [2, 3]
