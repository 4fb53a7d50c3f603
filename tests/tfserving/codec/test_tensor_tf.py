"""The codec against real TensorFlow: ``tf.make_tensor_proto`` → ours, ours → ``tf.make_ndarray``.

TensorFlow and our generated protos define the same proto names, so TensorFlow runs in one child
process for the whole batch: the test sends arrays and our serialized protos as JSON on stdin, the
child answers with TensorFlow's serialized protos and decoded arrays on stdout.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest

from channel.dtypes import numpy_dtype
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.tfserving.codec import tensor_decode, tensor_encode
from tests.support import tools

pytestmark = pytest.mark.tfclient


@pytest.fixture(autouse=True)
def _tensorflow() -> None:
    tools.package("tensorflow")


CHILD_TIMEOUT_S = 300

CHILD = r"""
import base64, json, sys
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2

def decode(item):
    shape = tuple(item["shape"])
    if item["dtype"] == "string":
        flat = np.empty(len(item["items"]), dtype=object)
        flat[:] = [base64.b64decode(s) for s in item["items"]]
        return flat.reshape(shape)
    dtype = np.dtype(tf.as_dtype(item["dtype"]).as_numpy_dtype)
    return np.frombuffer(base64.b64decode(item["data"]), dtype=dtype).reshape(shape)

def encode(array):
    if array.dtype == object:
        items = [base64.b64encode(bytes(s)).decode() for s in array.ravel().tolist()]
        return {"dtype": "string", "shape": list(array.shape), "items": items}
    data = base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()
    return {"dtype": array.dtype.name, "shape": list(array.shape), "data": data}

request = json.load(sys.stdin)
made = []
for case in request["make"]:
    array = decode(case["array"])
    if case["shape"] is None:
        proto = tf.make_tensor_proto(array)
    else:
        proto = tf.make_tensor_proto(array.reshape(()), shape=case["shape"])
    made.append(base64.b64encode(proto.SerializeToString()).decode())
read = []
for blob in request["read"]:
    proto = tensor_pb2.TensorProto.FromString(base64.b64decode(blob))
    read.append(encode(tf.make_ndarray(proto)))
sys.stdout.write(json.dumps({"made": made, "read": read}) + "\n")
"""


def _f32(bits: int) -> float:
    return float(np.uint32(bits).view(np.float32))


def _f64(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])


def _ints(dtype: type[np.integer[Any]]) -> npt.NDArray[Any]:
    info = np.iinfo(dtype)
    values = [info.min, info.max, 0, 1, 42, info.max - 1]
    if info.min < 0:
        values[4] = -1
    return np.array(values, dtype=dtype)


def _complex(real: npt.NDArray[Any], imag: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Bit-exact components (``real + 1j * imag`` would turn ``1j * inf`` into a NaN real part)."""
    pairs = np.stack([real, imag], axis=-1).reshape(-1)
    return pairs.view(np.complex64 if real.dtype == np.float32 else np.complex128)


# Quiet NaNs only: TensorFlow's Python typed-field path goes through Python floats, which quiet a
# signalling NaN on x86; quiet NaN payloads survive.
F32 = np.array(
    [0.0, -0.0, 1.5, -np.inf, np.inf, _f32(0x7FC0_0001), np.finfo(np.float32).max, _f32(1), 3.25],
    dtype=np.float32,
)
F64 = np.array([0.0, -0.0, 1.5, -np.inf, np.inf, _f64(0x7FF8_0000_0000_ABCD), 1e308, _f64(1), 3.25])
HALF_BITS = np.array([0x0000, 0x8000, 0x3C00, 0xFC00, 0x7C00, 0x7E01, 0x7BFF, 0x0001, 0x4248])
BF16_BITS = np.array([0x0000, 0x8000, 0x3F80, 0xFF80, 0x7F80, 0x7FC1, 0x7F7F, 0x0001, 0x4049])

VALUES: dict[str, npt.NDArray[Any]] = {
    "float32": F32,
    "float64": F64,
    "float16": HALF_BITS.astype(np.uint16).view(np.float16),
    "bfloat16": BF16_BITS.astype(np.uint16).view(ml_dtypes.bfloat16),
    "int8": _ints(np.int8),
    "int16": _ints(np.int16),
    "int32": _ints(np.int32),
    "int64": _ints(np.int64),
    "uint8": _ints(np.uint8),
    "uint16": _ints(np.uint16),
    "uint32": _ints(np.uint32),
    "uint64": _ints(np.uint64),
    "bool": np.array([True, False, False, True, True, False]),
    "string": np.array([b"", b"abc", "é".encode(), b"\x00\xff", b"x" * 300, b" "], dtype=object),
    "complex64": _complex(F32[:6], F32[3:9]),
    "complex128": _complex(F64[:6], F64[3:9]),
}


def _shaped(name: str) -> dict[str, npt.NDArray[Any]]:
    values = VALUES[name]
    return {
        "matrix": values[:6].reshape(2, 3),
        "scalar": values[2].reshape(()) if name != "string" else values[2:3].reshape(()),
        "one": values[5:6],
        "empty": values[:0].reshape(0, 3),
    }


CASES = [(name, kind, array) for name in VALUES for kind, array in _shaped(name).items()]
BROADCASTS = [(name, VALUES[name][4:5]) for name in VALUES]
"""``tf.make_tensor_proto(value, shape=[2, 2])``: one typed value standing for four."""


def _encode(array: npt.NDArray[Any]) -> dict[str, Any]:
    if array.dtype == object:
        items = [base64.b64encode(item).decode() for item in array.ravel().tolist()]
        return {"dtype": "string", "shape": list(array.shape), "items": items}
    data = base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()
    return {"dtype": array.dtype.name, "shape": list(array.shape), "data": data}


def _decode(item: dict[str, Any]) -> npt.NDArray[Any]:
    shape = tuple(item["shape"])
    if item["dtype"] == "string":
        flat = np.empty(len(item["items"]), dtype=object)
        flat[:] = [base64.b64decode(text) for text in item["items"]]
        return flat.reshape(shape)
    dtype = numpy_dtype(item["dtype"])
    return np.frombuffer(base64.b64decode(item["data"]), dtype=dtype).reshape(shape)


def _assert_identical(actual: npt.NDArray[Any], expected: npt.NDArray[Any]) -> None:
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if expected.dtype == object:
        assert actual.ravel().tolist() == expected.ravel().tolist()
    else:
        bits = np.ascontiguousarray(actual).reshape(-1).view(np.uint8)
        np.testing.assert_array_equal(
            bits, np.ascontiguousarray(expected).reshape(-1).view(np.uint8)
        )


def _ours(array: npt.NDArray[Any], as_tensor_content: bool) -> str:
    proto = tensor_encode.from_ndarray(array, as_tensor_content=as_tensor_content)
    return base64.b64encode(proto.SerializeToString()).decode()


@pytest.fixture(scope="module")
def tensorflow_answers() -> dict[str, list[Any]]:
    """Every case through TensorFlow in one child process (``import tensorflow`` costs ~2 s)."""
    request = {
        "make": [{"array": _encode(array), "shape": None} for _, _, array in CASES]
        + [{"array": _encode(array), "shape": [2, 2]} for _, array in BROADCASTS],
        "read": [_ours(array, flag) for _, _, array in CASES for flag in (False, True)],
    }
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    child = subprocess.run(
        [sys.executable, "-I", "-c", CHILD],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-4000:]
    answers: dict[str, list[Any]] = json.loads(child.stdout.splitlines()[-1])
    return answers


CASE_IDS = [f"{name}-{kind}" for name, kind, _ in CASES]


@pytest.mark.parametrize("index", range(len(CASES)), ids=CASE_IDS)
def test_make_tensor_proto_decodes_to_the_same_array(
    index: int, tensorflow_answers: dict[str, list[Any]]
) -> None:
    _, _, array = CASES[index]
    proto = TensorProto.FromString(base64.b64decode(tensorflow_answers["made"][index]))
    _assert_identical(
        tensor_decode.to_ndarray(proto, max_elements=max(array.size, *array.shape, 1)), array
    )


@pytest.mark.parametrize("index", range(len(BROADCASTS)), ids=[name for name, _ in BROADCASTS])
def test_make_tensor_proto_broadcast_value_repeats(
    index: int, tensorflow_answers: dict[str, list[Any]]
) -> None:
    _, value = BROADCASTS[index]
    blob = tensorflow_answers["made"][len(CASES) + index]
    decoded = tensor_decode.to_ndarray(
        TensorProto.FromString(base64.b64decode(blob)), max_elements=4
    )
    expected = np.concatenate([value] * 4).reshape(2, 2)
    _assert_identical(decoded, expected)


@pytest.mark.parametrize("index", range(len(CASES)), ids=CASE_IDS)
@pytest.mark.parametrize("as_tensor_content", [False, True], ids=["typed", "content"])
def test_make_ndarray_reads_ours(
    index: int, as_tensor_content: bool, tensorflow_answers: dict[str, list[Any]]
) -> None:
    _, _, array = CASES[index]
    answer = tensorflow_answers["read"][2 * index + int(as_tensor_content)]
    _assert_identical(_decode(answer), array)
