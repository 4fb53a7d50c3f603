"""JSON read with simdjson, numbers straight into buffers: the same tensors and the same refusals
as orjson's objects give, through both protocols' codecs, or no answer at all (None)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway import json_numbers
from gateway.errors import ServingError
from gateway.json_numbers import Numbers
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.rest import json_request
from gateway.v2.declared import Limits, declare_input
from gateway.v2.rest import json_values as v2_values
from gateway.v2.rest import request_body

TF = json_request.TENSOR_PLACES
V2 = request_body.TENSOR_PLACES


def tf_outcome(body: bytes, dtype: str, fast: bool) -> Any:
    """What TF Serving's codec makes of ``body`` for one input of ``dtype``: the array (dtype,
    shape, values) or the error (type, message); ``fast``: read by json_numbers when it can."""
    signature = Signature("s", (TensorSpec("x", dtype, None),), (TensorSpec("y", dtype, None),))
    try:
        document = json_numbers.read(body, TF, dense=True) if fast else None
        if document is None:
            document = json_request.loads(body)
        inputs, _ = json_request.predict_inputs(document, signature, max_elements=10**6)
    except ServingError as exc:
        return type(exc).__name__, exc.message
    array = inputs["x"]
    return str(array.dtype), array.shape, array.tobytes()


def test_numbers_at_the_tensors_places_and_orjsons_values_elsewhere() -> None:
    body = b'{"signature_name": "s", "meta": {"k": [1, "a", null]}, "instances": [[1, 2], [3, 4]]}'
    document = json_numbers.read(body, TF, dense=True)
    assert document is not None
    numbers = document["instances"]
    assert type(numbers) is Numbers and numbers.shape == (2, 2)
    assert numbers.values.dtype == np.int64 and numbers.values.tolist() == [1, 2, 3, 4]
    assert numbers.python() == [[1, 2], [3, 4]]
    rest = {k: v for k, v in document.items() if k != "instances"}
    assert rest == {k: v for k, v in orjson.loads(body).items() if k != "instances"}
    floats = json_numbers.read(b'{"inputs": {"a": [1, 2.5], "b": ["x"]}}', TF, dense=True)
    assert floats is not None and floats["inputs"]["b"] == ["x"]
    assert floats["inputs"]["a"].values.dtype == np.float64


@pytest.mark.parametrize(
    "body",
    [
        b'{"instances": [[1, 2], [3], [4, 5, 6]]}',  # ragged with the count of a dense (3, 2)
        b'{"instances": [[], [1]]}',  # an empty array and one of one number look alike
        b'{"instances": [[1], []]}',
        b'{"instances": [[1, [2]], [3, 4]]}',
        b'{"inputs": {"a": [[1, 2], [3]]}}',
    ],
)
def test_ragged_numbers_are_never_read_as_dense(body: bytes) -> None:
    document = json_numbers.read(body, TF, dense=True)
    assert document is None or document == orjson.loads(body)  # lists: the codec says why


@pytest.mark.parametrize(
    "body",
    [
        b'{"instances": [1, 2], "instances": [[3]]}',  # a repeated key
        b'{"instances": [NaN]}',
        b'\xef\xbb\xbf{"instances": [1]}',
        b'[{"instances": [1]}]',
        b'{"signature_name": "a\\"b", "instances": [1]}',  # a backslash
        b'{"instances": ' + b"[" * 2000 + b"]" * 2000 + b"}",
        b'{"a": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1001,  # past Python's recursion
    ],
)
def test_what_it_cannot_vouch_for_is_left_to_orjson(body: bytes) -> None:
    assert json_numbers.read(body, TF, dense=True) is None


DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int32", "uint8", "uint64", "bool")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "values",
    [
        [[1.5, 2], [3, 4.25]],
        [[1, 2], [3, 4]],
        [16777217, 1.5],  # not a float32: exact integers only
        [16777216.0, 1e30, -0.0],  # floats: rounded
        [3.4028236e38],  # past float32
        [127, 128, -129],
        [2**63 - 1, -(2**63)],
        [2**63, 1],  # past int64: a uint64
        [],
        [[[]]],
    ],
)
def test_the_tf_codec_gives_the_same_tensor_or_refusal_either_way(
    dtype: str, values: list[Any]
) -> None:
    for key in ("instances", "inputs"):
        body = json.dumps({key: values}).encode()
        assert tf_outcome(body, dtype, fast=True) == tf_outcome(body, dtype, fast=False)


def test_dense_numbers_do_take_the_fast_way() -> None:
    body = json.dumps({"instances": np.arange(24.0).reshape(2, 3, 4).tolist()}).encode()
    document = json_numbers.read(body, TF, dense=True)
    assert document is not None and document["instances"].shape == (2, 3, 4)


leaf = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e300, -1e-300, 65520.0, 3.4028235e38, 16777217]),
)
nested = st.recursive(
    st.lists(leaf, max_size=4), lambda inner: st.lists(inner, max_size=3), max_leaves=24
)


@given(values=nested, dtype=st.sampled_from(DTYPES))
def test_any_nesting_of_numbers_reads_the_same_either_way(values: Any, dtype: str) -> None:
    body = json.dumps({"instances": values}).encode()
    assert tf_outcome(body, dtype, fast=True) == tf_outcome(body, dtype, fast=False)


def v2_outcome(data: Any, datatype: str, shape: list[int], fast: bool) -> Any:
    body = json.dumps({"inputs": [{"name": "x", "data": data}]}).encode()
    document = json_numbers.read(body, V2) if fast else None
    item = (document or orjson.loads(body))["inputs"][0]
    try:
        with np.errstate(over="ignore"):  # V2 rounds past FP16's range to inf, with a warning
            array = v2_values.to_array(
                item["data"], declare_input("x", datatype, shape, Limits(10**6))
            )
    except ServingError as exc:
        return type(exc).__name__, exc.message
    return str(array.dtype), array.shape, array.tobytes()


@given(
    values=nested,
    datatype=st.sampled_from(["FP32", "FP16", "BF16", "FP64", "INT8", "INT64", "UINT64", "BOOL"]),
)
def test_v2_data_of_any_nesting_reads_the_same_either_way(values: Any, datatype: str) -> None:
    count = len(v2_values.flatten(values))
    for shape in ([count], [count + 1]):
        assert v2_outcome(values, datatype, shape, True) == v2_outcome(
            values, datatype, shape, False
        )
