"""Property tests as a hostile client: arbitrary PredictRequests (structured and raw bytes) and
arbitrary REST JSON bodies decode to tensors that satisfy the signature, or fail with a canonical
client error — never another exception (which the adapters would answer INTERNAL).

Derandomized in ``make test`` (the ``ci`` profile); ``make test-long`` runs them randomized and
longer, and ``python -m bench fuzz`` drives a real gateway for minutes.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from hypothesis import given
from hypothesis import strategies as st

from channel.dtypes import DTYPE_NAMES
from gateway._pb.tensorflow.core.framework import types_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway._pb.tensorflow_serving.apis import predict_pb2
from gateway.errors import Code, ServingError
from gateway.serving.inputs import ConvertedInputs, validated
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.codec import service_messages, tensor_types
from gateway.tfserving.rest import json_request

CLIENT_ERRORS = {Code.INVALID_ARGUMENT, Code.RESOURCE_EXHAUSTED, Code.UNIMPLEMENTED}
DTYPES = sorted(DTYPE_NAMES)
DATA_TYPES = [v for v in types_pb2.DataType.values() if v]
HUGE = [2**31, 2**40, 2**62, 2**63 - 1]
MAX_ELEMENTS = 4096
MAX_BYTES = 64 * 1024

int32s = st.integers(-(2**31), 2**31 - 1)
shapes = st.one_of(
    st.lists(st.integers(-2, 6), max_size=5),
    st.lists(st.sampled_from([0, 1, 3, *HUGE]), min_size=1, max_size=4),  # zeros beside huge
)


@st.composite
def tensor_protos(draw: st.DrawFn, data_type: int | None = None) -> TensorProto:
    """Any TensorProto; of ``data_type`` most of the time when one is given (so that decoding
    goes past the signature's dtype check)."""
    if data_type is None or draw(st.integers(0, 3)) == 0:
        data_type = draw(st.one_of(st.sampled_from(DATA_TYPES), st.integers(-3, 40)))
    proto = TensorProto(dtype=data_type)  # type: ignore[arg-type]  # numbers past the enum too
    if draw(st.integers(0, 9)) == 0:
        proto.tensor_shape.unknown_rank = True
    for size in draw(shapes):
        proto.tensor_shape.dim.add(size=size)
    if draw(st.integers(0, 2)) == 0:
        proto.tensor_content = draw(st.binary(max_size=96))
    if draw(st.booleans()):  # else no typed values at all: zeros (or b"") fill the shape
        proto.float_val.extend(draw(st.lists(st.floats(width=32), max_size=8)))
        proto.double_val.extend(draw(st.lists(st.floats(), max_size=4)))
        proto.int_val.extend(draw(st.lists(int32s, max_size=8)))
        proto.int64_val.extend(draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4)))
        proto.string_val.extend(draw(st.lists(st.binary(max_size=8), max_size=4)))
        proto.bool_val.extend(draw(st.lists(st.booleans(), max_size=4)))
        proto.half_val.extend(draw(st.lists(int32s, max_size=4)))
        proto.uint32_val.extend(draw(st.lists(st.integers(0, 2**32 - 1), max_size=4)))
        proto.uint64_val.extend(draw(st.lists(st.integers(0, 2**64 - 1), max_size=4)))
        proto.scomplex_val.extend(draw(st.lists(st.floats(width=32), max_size=4)))
    return proto


signatures = st.builds(
    lambda dtype, shape, check: Signature(
        "serving_default", (TensorSpec("x", dtype, shape),), (), check_shapes=check
    ),
    st.sampled_from(DTYPES),
    st.one_of(st.none(), st.none(), st.lists(st.integers(-1, 4), max_size=3).map(tuple)),
    st.booleans(),
)


def _decode_or_client_error(request: predict_pb2.PredictRequest, signature: Signature) -> None:
    try:
        decoded = service_messages.PredictInputs(
            request, signature, max_elements=MAX_ELEMENTS, max_bytes=MAX_BYTES
        )
        inputs = validated(signature, decoded)
    except ServingError as exc:
        assert exc.code in CLIENT_ERRORS, exc
        return
    validated(
        signature, ConvertedInputs(inputs)
    )  # the values converted are what the headers declared
    for name, array in inputs.items():
        assert array.shape == tuple(d.size for d in request.inputs[name].tensor_shape.dim)
        assert array.size <= MAX_ELEMENTS


@st.composite
def requests_for(draw: st.DrawFn, signature: Signature) -> predict_pb2.PredictRequest:
    """A request for ``signature``: usually its input name, often its dtype."""
    spec = signature.inputs[0]
    names = draw(st.one_of(st.just(["x"]), st.lists(st.sampled_from(["x", "y"]), max_size=2)))
    request = predict_pb2.PredictRequest()
    for name in names:
        request.inputs[name].CopyFrom(draw(tensor_protos(tensor_types.data_type(spec.dtype))))
    return request


@given(st.data(), signatures)
def test_any_predict_request_decodes_or_is_a_client_error(
    data: st.DataObject, signature: Signature
) -> None:
    _decode_or_client_error(data.draw(requests_for(signature)), signature)


@given(st.binary(max_size=300), signatures)
def test_any_bytes_are_undecodable_or_a_request_handled_as_such(
    data: bytes, signature: Signature
) -> None:
    try:
        request = predict_pb2.PredictRequest.FromString(data)
    except DecodeError:
        return  # the gRPC gate answers INVALID_ARGUMENT (tests/e2e/test_grpc_errors.py)
    _decode_or_client_error(request, signature)


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(),
        st.text(max_size=6),
        st.fixed_dictionaries({"b64": st.text(max_size=8)}),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=24,
)
bodies = st.one_of(
    st.fixed_dictionaries({"instances": json_values}),
    st.fixed_dictionaries({"inputs": json_values}),
    st.fixed_dictionaries(
        {"signature_name": json_values, "instances": json_values}, optional={"inputs": json_values}
    ),
    json_values,
)
rest_signatures = st.lists(st.sampled_from(DTYPES), min_size=1, max_size=2).map(
    lambda dtypes: Signature(
        "serving_default",
        tuple(TensorSpec(f"in{i}", dtype, None) for i, dtype in enumerate(dtypes)),
        (),
    )
)


def _rest_decode_or_client_error(body: bytes, signature: Signature) -> None:
    try:
        request = json_request.loads(body)
        json_request.signature_name(request)
        arrays, _ = json_request.predict_inputs(
            request, signature, max_elements=MAX_ELEMENTS, max_bytes=MAX_BYTES
        )
        inputs = validated(signature, ConvertedInputs(arrays))
    except ServingError as exc:
        assert exc.code in CLIENT_ERRORS, exc
        return
    assert all(isinstance(a, np.ndarray) and a.size <= MAX_ELEMENTS for a in inputs.values())


@given(bodies, rest_signatures)
def test_any_json_body_decodes_or_is_a_client_error(body: Any, signature: Signature) -> None:
    text = json.dumps(body, allow_nan=True)
    _rest_decode_or_client_error(text.encode(), signature)


raw_bodies = st.one_of(
    st.binary(max_size=200),
    st.builds(  # number literals of any length: Python refuses ints of over 4300 digits
        lambda digits, exponent: f'{{"instances": [{"9" * digits}{exponent}]}}'.encode(),
        st.integers(1, 6000),
        st.sampled_from(["", ".5", "e999", "e-999", "0" * 400]),
    ),
)


@given(raw_bodies, rest_signatures)
def test_any_bytes_as_a_json_body_are_a_client_error_at_worst(
    data: bytes, signature: Signature
) -> None:
    _rest_decode_or_client_error(data, signature)
