"""Tensors → REST response bodies (pure, no server): predict responses in both formats, what a
response writes a request reads back, and the status, metadata and error bodies."""

from __future__ import annotations

import base64
import json
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from channel.dtypes import dtype_name
from gateway.errors import Internal, InvalidArgument
from gateway.serving.registry import State, VersionStatus
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.codec import service_messages
from gateway.tfserving.rest import json_request, json_response
from gateway.tfserving.rest.json_request import Format
from tests.support.rest_json import MAX, decode, sig

JSON_DTYPES = [
    *("float16", "bfloat16", "float32", "float64", "bool", "string"),
    *("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
]
"""Every dtype a REST body can carry (all of TF Serving's but the complex ones)."""


def encode(outputs: dict[str, np.ndarray], fmt: Format) -> Any:
    return json.loads(json_response.predict_json(outputs, fmt))


def test_single_output_drops_its_name() -> None:
    y = np.array([[0.1, 0.2], [0.3, 0.4]], np.float32)
    assert encode({"y": y}, Format.ROW) == {"predictions": [[0.1, 0.2], [0.3, 0.4]]}
    assert encode({"y": y}, Format.COLUMNAR) == {"outputs": [[0.1, 0.2], [0.3, 0.4]]}
    assert encode({"y": np.array(7, np.int64)}, Format.COLUMNAR) == {"outputs": 7}


def test_several_outputs_are_keyed_by_name() -> None:
    outputs = {"sum": np.array([[5.0], [1.0]], np.float32), "flag": np.array([True, False])}
    assert encode(outputs, Format.ROW) == {
        "predictions": [{"sum": [5.0], "flag": True}, {"sum": [1.0], "flag": False}]
    }
    assert encode(outputs, Format.COLUMNAR) == {
        "outputs": {"sum": [[5.0], [1.0]], "flag": [True, False]}
    }


def test_float32_in_shortest_form_and_non_finite_literals() -> None:
    y = np.array([[0.1, np.nan], [np.inf, -np.inf]], np.float32)
    body = json_response.predict_json({"y": y}, Format.COLUMNAR)
    assert body == b'{"outputs":[[0.1,NaN],[Infinity,-Infinity]]}'
    two: dict[str, np.ndarray] = {"y": y, "z": np.array([np.nan, 1], np.float64)}
    assert json_response.predict_json(two, Format.ROW) == (
        b'{"predictions":[{"y":[0.1,NaN],"z":NaN},{"y":[Infinity,-Infinity],"z":1.0}]}'
    )
    assert json_response.predict_json({"y": np.array(np.nan)}, Format.COLUMNAR) == (
        b'{"outputs":NaN}'
    )


def test_bytes_outputs_are_b64_and_strings_utf8() -> None:
    outputs = {
        "image_bytes": np.array([[b"\x00\xff"], [b""]], dtype=object),
        "label": np.array([["café"], [b"ok"]], dtype=object),
    }
    assert encode(outputs, Format.ROW) == {
        "predictions": [
            {"image_bytes": [{"b64": "AP8="}], "label": ["café"]},
            {"image_bytes": [{"b64": ""}], "label": ["ok"]},
        ]
    }
    with pytest.raises(Internal, match=r"not valid UTF-8; name outputs .* '_bytes' suffix"):
        json_response.predict_json({"raw": np.array([b"\xff"], object)}, Format.COLUMNAR)


def test_other_dtypes_and_layouts() -> None:
    outputs = {
        "h": np.array([0.5, 1], np.float16),
        "bf": np.array([0.5, 1], ml_dtypes.bfloat16),
        "u": np.array([2**64 - 1, 0], np.uint64),
        "t": np.arange(6, dtype=">i4").reshape(2, 3).T[:2],  # big-endian, not contiguous
    }
    assert encode(outputs, Format.ROW) == {
        "predictions": [
            {"h": 0.5, "bf": 0.5, "u": 2**64 - 1, "t": [0, 3]},
            {"h": 1.0, "bf": 1.0, "u": 0, "t": [1, 4]},
        ]
    }
    with pytest.raises(InvalidArgument, match="tensor type: complex64"):
        json_response.predict_json({"c": np.zeros(1, np.complex64)}, Format.COLUMNAR)


def test_row_format_needs_one_batch_size() -> None:
    with pytest.raises(InvalidArgument, match="has no shape information"):
        json_response.predict_json({"y": np.array(1.0)}, Format.ROW)
    with pytest.raises(InvalidArgument, match="has invalid batch size: 0"):
        json_response.predict_json({"y": np.zeros((0, 2))}, Format.ROW)
    with pytest.raises(InvalidArgument, match="inconsistent batch size: 3 expecting: 2"):
        json_response.predict_json({"y": np.zeros(2), "z": np.zeros(3)}, Format.ROW)
    with pytest.raises(InvalidArgument, match="empty tensor map"):
        json_response.predict_json({}, Format.ROW)


FLOAT32_EXTREMES = [
    np.finfo(np.float32).max,  # 3.4028235e38 as orjson writes it: once refused
    np.nextafter(np.finfo(np.float32).max, np.float32(0)),
    np.finfo(np.float32).smallest_normal,
    np.finfo(np.float32).smallest_subnormal,
    np.float32(-0.0),
]


SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4).filter(
    lambda shape: 0 not in shape[:-1]
)
"""Shapes JSON can carry: below an empty list there is nothing to tell the deeper dimensions."""

BFLOAT16_EXTREMES = [0x7F7F, 0xFF7F, 0x0080, 0x0001, 0x8000, 0x7F81]
"""Bit patterns: ±max, smallest normal and subnormal, -0.0, a signalling NaN."""


def _elements(dtype: str, name: str) -> st.SearchStrategy[Any]:
    """Any value of ``dtype``, non-finite and extreme ones included."""
    if dtype == "string":  # binary data under a ``*_bytes`` name, UTF-8 text otherwise
        if name.endswith("_bytes"):
            return st.binary(max_size=8)
        return st.text(max_size=4).map(str.encode)
    if dtype == "float32":
        extremes = st.sampled_from(FLOAT32_EXTREMES).flatmap(lambda v: st.sampled_from([v, -v]))
        return st.one_of(extremes, hnp.from_dtype(np.dtype(np.float32)))
    return hnp.from_dtype(np.dtype(dtype))


def _arrays(dtype: str, name: str, shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    if dtype == "bfloat16":  # every bit pattern: hypothesis has no bfloat16 strategy
        bits = st.one_of(st.sampled_from(BFLOAT16_EXTREMES), st.integers(0, 0xFFFF))
        return hnp.arrays(np.uint16, shape, elements=bits).map(lambda a: a.view(ml_dtypes.bfloat16))
    stored = np.dtype(object) if dtype == "string" else np.dtype(dtype)
    return hnp.arrays(stored, shape, elements=_elements(dtype, name))


def _round_trip(outputs: dict[str, np.ndarray], fmt: Format) -> dict[str, np.ndarray]:
    """The response body's own text sent back as a request (its key renamed) and decoded."""
    response = json_response.predict_json(outputs, fmt)
    key = b'{"predictions":' if fmt is Format.ROW else b'{"outputs":'
    assert response.startswith(key)
    request = b'{"' + fmt.value.encode() + b'":' + response[len(key) :]
    inputs = {name: dtype_name(array.dtype) for name, array in outputs.items()}
    signature = sig(*inputs.items())
    decoded, got = json_request.predict_inputs(
        json_request.loads(request), signature, max_elements=MAX
    )
    assert got is fmt
    return decoded


def _assert_same(got: np.ndarray, sent: np.ndarray) -> None:
    assert got.dtype == sent.dtype
    assert got.shape == sent.shape
    if sent.dtype.kind not in "fV":  # bfloat16's kind is V
        np.testing.assert_array_equal(got, sent)
        return
    with np.errstate(invalid="ignore"):  # casting a signalling NaN sets the invalid flag
        values, sent_values = got.astype(np.float64), sent.astype(np.float64)
    np.testing.assert_array_equal(values, sent_values)  # NaN equals NaN
    assert ((np.signbit(values) == np.signbit(sent_values)) | np.isnan(sent_values)).all()  # -0.0


@pytest.mark.parametrize(
    ("dtype", "name"), [(dtype, "x") for dtype in JSON_DTYPES] + [("string", "x_bytes")]
)
@settings(max_examples=settings().max_examples * 2 // 5)  # 15 cases: 40 examples under ci
@given(data=st.data())
def test_round_trip_through_json(dtype: str, name: str, data: st.DataObject) -> None:
    """A response's tensors sent back as a request come back the same: every dtype, both
    formats, one output (bare) or two (keyed by name)."""
    shape = data.draw(SHAPES)
    one = data.draw(_arrays(dtype, name, shape))
    two = {f"a_{name}": one, f"b_{name}": data.draw(_arrays(dtype, name, shape))}
    formats = [Format.COLUMNAR] + ([Format.ROW] if shape and shape[0] else [])  # row: a batch
    for fmt in formats:
        _assert_same(_round_trip({name: one}, fmt)[name], one)
        for key, decoded in _round_trip(two, fmt).items():
            _assert_same(decoded, two[key])


def test_status_json_as_tf_serving() -> None:
    statuses = [
        VersionStatus(1, State.AVAILABLE),
        VersionStatus(2, State.END, InvalidArgument("bad model")),
    ]
    body = json_response.status_body(service_messages.status_response("m", statuses))
    assert json.loads(body) == {
        "model_version_status": [
            {
                "version": "1",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            },
            {
                "version": "2",
                "state": "END",
                "status": {"error_code": "INVALID_ARGUMENT", "error_message": "bad model"},
            },
        ]
    }


def test_metadata_json_as_tf_serving() -> None:
    signature = Signature(
        "serving_default",
        (TensorSpec("x", "float32", (-1, 2)),),
        (TensorSpec("y", "string", None),),
    )
    response = service_messages.metadata_response("m", 3, {"serving_default": signature})
    assert json.loads(json_response.metadata_body(response)) == {
        "model_spec": {"name": "m", "signature_name": "", "version": "3"},
        "metadata": {
            "signature_def": {
                "signature_def": {
                    "serving_default": {
                        "inputs": {
                            "x": {
                                "dtype": "DT_FLOAT",
                                "tensor_shape": {
                                    "dim": [{"size": "-1", "name": ""}, {"size": "2", "name": ""}],
                                    "unknown_rank": False,
                                },
                                "name": "x",
                            }
                        },
                        "outputs": {
                            "y": {
                                "dtype": "DT_STRING",
                                "tensor_shape": {"dim": [], "unknown_rank": True},
                                "name": "y",
                            }
                        },
                        "method_name": "tensorflow/serving/predict",
                        "defaults": {},
                    }
                }
            }
        },
    }


def test_dumps_refuses_what_json_cannot_hold() -> None:
    assert json_response.dumps({"results": [[["a", 0.5]]]}) == b'{"results":[[["a",0.5]]]}'
    with pytest.raises(Internal, match="not JSON-serialisable"):
        json_response.dumps({"x": object()})


def test_b64_round_trip_of_random_bytes() -> None:
    data = bytes(range(256))
    text = base64.b64encode(data).decode()
    inputs, _ = decode(f'{{"inputs": [{{"b64": "{text}"}}]}}', sig(("s", "string")))
    assert inputs["s"][0] == data
    body = json_response.predict_json({"s_bytes": inputs["s"]}, Format.COLUMNAR)
    assert json.loads(body) == {"outputs": [{"b64": text}]}
