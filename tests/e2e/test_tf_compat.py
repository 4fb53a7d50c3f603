"""TF Serving's own model-server tests, against one real gateway process serving the SavedModels
those tests use (built by ``tests/support/tf_compat_models_script.py``), on gRPC and REST.

Reproduced with their requests and expected answers unchanged:

- ``tensorflow_serving/model_servers/tensorflow_model_server_test.py``: Predict (half_plus_two as
  ``default`` and ``half_plus_two``, half_plus_three, the TF2 ``tf.saved_model.save`` exports and
  the Keras Sequential one), Classify, Regress, MultiInference, GetModelStatus over gRPC with the
  official client (in its own process); ``testClassifyREST``, ``testRegressREST``,
  ``testPredictREST``, ``testPredictColumnarREST``, ``testGetStatusREST``,
  ``testGetModelMetadataREST`` (its ``half_plus_two_model_metadata.json``).
- ``model_servers/http_rest_api_handler_test.cc`` on ``saved_model_half_plus_two_2_versions``
  (specific version 123, label ``Version_Label``): Predict, Regress, Classify, GetStatus,
  GetModelMetadata (its ``saved_model_half_plus_two_2_versions_metadata.json``) and the request
  errors.

Metadata is compared field by field, on both transports, with those JSON files and with each
SavedModel's own ``signature_def`` map (which TF Serving copies into GetModelMetadata verbatim).
Differences from upstream: every SignatureDef carries ``"defaults": {}`` (the field of newer
TensorFlow protos, printed empty as upstream's newer files show), and a JSON syntax error is
worded by Python's parser, not rapidjson (``Expecting value`` for ``Invalid value.``).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import numpy as np
import pytest

from gateway._pb.tensorflow.core.protobuf import meta_graph_pb2
from gateway.errors import InvalidArgument
from gateway.serving.inputs import ConvertedInputs, validated
from gateway.serving.signature import Signature, TensorSpec, find_signature
from gateway.tfserving.codec import service_messages
from tests.support.paths import SUPPORT
from tests.support.tf_compat import MODELS, TWO_VERSIONS, VERSION_LABEL, Served
from tests.support.tf_compat_models_script import SIGNATURE_DEFS

pytestmark = pytest.mark.tfclient

CLIENT = SUPPORT / "tf_compat_client_script.py"
CLIENT_TIMEOUT_S = 300
HTTP_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def grpc_calls(served: Served, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every call of tf_compat_client_script.py against the gateway, by name."""
    out = tmp_path_factory.mktemp("compat_client") / "calls.json"
    done = subprocess.run(
        [sys.executable, str(CLIENT), served.process.target, str(out), *MODELS],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


@pytest.fixture(scope="module")
def model_signature_defs(served: Served) -> dict[str, Any]:
    """Per model directory, the signature_def map its SavedModel declares."""
    result: dict[str, Any] = json.loads((served.models / SIGNATURE_DEFS).read_text())
    return result


def call_rest(url: str, req: Any = None, *, raw: bytes | None = None) -> tuple[int, Any]:
    """Upstream's ``CallREST``: POST ``json.dumps(req)`` (GET when ``req`` is None), or POST the
    ``raw`` body as is; the status and the parsed JSON answer."""
    data = raw if raw is not None else None if req is None else json.dumps(req).encode("utf-8")
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data=data), timeout=HTTP_TIMEOUT_S
        ) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# -- expected metadata, as upstream's JSON files spell it ----------------------------------------
def tensor(name: str, dtype: str, dims: list[int] | None) -> dict[str, Any]:
    """A TensorInfo as JSON; ``dims`` None is an unknown rank."""
    shape: dict[str, Any] = (
        {"dim": [], "unknown_rank": True}
        if dims is None
        else {"dim": [{"size": str(d), "name": ""} for d in dims], "unknown_rank": False}
    )
    return {"dtype": dtype, "tensor_shape": shape, "name": name}


def signature(method: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "inputs": inputs,
        "outputs": outputs,
        "method_name": f"tensorflow/serving/{method}",
        "defaults": {},
    }


FLOAT_N1 = [-1, 1]
EXAMPLES = {"inputs": tensor("tf_example:0", "DT_STRING", None)}

HALF_PLUS_TWO_SIGNATURES = {
    "regress_x2_to_y3": signature(
        "regress",
        {"inputs": tensor("x2:0", "DT_FLOAT", FLOAT_N1)},
        {"outputs": tensor("y3:0", "DT_FLOAT", FLOAT_N1)},
    ),
    "serving_default": signature(
        "predict",
        {"x": tensor("x:0", "DT_FLOAT", FLOAT_N1)},
        {"y": tensor("y:0", "DT_FLOAT", FLOAT_N1)},
    ),
    "classify_x_to_y": signature(
        "classify", EXAMPLES, {"scores": tensor("y:0", "DT_FLOAT", FLOAT_N1)}
    ),
    "regress_x_to_y2": signature(
        "regress", EXAMPLES, {"outputs": tensor("y2:0", "DT_FLOAT", FLOAT_N1)}
    ),
    "regress_x_to_y": signature(
        "regress", EXAMPLES, {"outputs": tensor("y:0", "DT_FLOAT", FLOAT_N1)}
    ),
}
"""``half_plus_two_model_metadata.json``'s ``signature_def`` map."""

TWO_VERSIONS_SIGNATURES = {
    **HALF_PLUS_TWO_SIGNATURES,
    "classify_x2_to_y3": signature(
        "classify",
        {"inputs": tensor("x2:0", "DT_FLOAT", FLOAT_N1)},
        {"scores": tensor("y3:0", "DT_FLOAT", FLOAT_N1)},
    ),
}
"""``saved_model_half_plus_two_2_versions_metadata.json``'s ``signature_def`` map."""


def metadata_json(name: str, signatures: dict[str, Any]) -> dict[str, Any]:
    return {
        "model_spec": {"name": name, "signature_name": "", "version": "123"},
        "metadata": {"signature_def": {"signature_def": signatures}},
    }


STATUS_OK = {
    "model_version_status": [
        {
            "version": "123",
            "state": "AVAILABLE",
            "status": {"error_code": "OK", "error_message": ""},
        }
    ]
}


# -- gRPC: tensorflow_model_server_test.py -------------------------------------------------------
def spec(name: str, signature_name: str, version: str = "123") -> dict[str, Any]:
    return {"name": name, "signature_name": signature_name, "version": version}


@pytest.mark.parametrize(
    ("call", "model", "signature_name", "expected"),
    [
        ("predict_default", "default", "serving_default", 3.0),
        ("predict_default_all", "default", "serving_default", 3.0),
        ("predict_two", "half_plus_two", "serving_default", 3.0),
        ("predict_two_all", "half_plus_two", "serving_default", 3.0),
        ("predict_three", "half_plus_three", "serving_default", 4.0),
        ("predict_three_all", "half_plus_three", "serving_default", 4.0),
        ("predict_tf2", "tf_saved_model_save", "serving_default", 12.0),
        (
            "predict_tf2_custom",
            "tf_saved_model_save_multiple_signatures",
            "custom_signature_key",
            2.0,
        ),
        ("predict_tf2_default", "tf_saved_model_save_multiple_signatures", "serving_default", 1.0),
        ("predict_keras", "keras_sequential_saved_model_save", "serving_default", 2.0),
    ],
)
def test_verify_predict_request(
    grpc_calls: dict[str, Any], call: str, model: str, signature_name: str, expected: float
) -> None:
    """Upstream's ``VerifyPredictRequest``: x = [2.0] (shape [1], or [1, 1] for Keras)."""
    result = grpc_calls[call]
    assert "y" in result.get("outputs", {}), result
    y = result["outputs"]["y"]
    assert y["dtype"] == "DT_FLOAT"
    assert y["float_val"] == [expected]
    assert result["model_spec"] == spec(model, signature_name)


def test_classify_regress_multi_inference(grpc_calls: dict[str, Any]) -> None:
    classify = grpc_calls["classify"]
    assert classify["result"]["classifications"] == [{"classes": [{"label": "", "score": 3.0}]}]
    assert classify["model_spec"] == spec("default", "classify_x_to_y")
    regress = grpc_calls["regress"]
    assert regress["result"]["regressions"] == [{"value": 3.0}]
    assert regress["model_spec"] == spec("default", "regress_x_to_y")
    results = grpc_calls["multi_inference"]["results"]
    assert len(results) == 2
    assert results[0]["regression_result"]["regressions"] == [{"value": 3.0}]
    assert results[1]["classification_result"]["classifications"][0]["classes"][0]["score"] == 3.0
    assert [r["model_spec"] for r in results] == [
        spec("default", "regress_x_to_y"),
        spec("default", "classify_x_to_y"),
    ]


def test_get_model_status(grpc_calls: dict[str, Any]) -> None:
    (status,) = grpc_calls["status"]["model_version_status"]
    assert status["version"] == "123"
    assert status["state"] == "AVAILABLE"
    assert status["status"]["error_code"] == "OK"


def test_grpc_metadata_is_tf_servings(
    grpc_calls: dict[str, Any], model_signature_defs: dict[str, Any]
) -> None:
    """GetModelMetadata answers the SavedModel's signature_def map: graph tensor names, dtypes,
    shapes, method names, TF2's ``__saved_model_init_op`` (a NoOp of dtype DT_INVALID)."""
    assert grpc_calls["metadata:default"] == metadata_json("default", HALF_PLUS_TWO_SIGNATURES)
    assert grpc_calls[f"metadata:{TWO_VERSIONS}"] == metadata_json(
        TWO_VERSIONS, TWO_VERSIONS_SIGNATURES
    )
    for name, directory in MODELS.items():
        expected = metadata_json(name, model_signature_defs[directory])
        assert grpc_calls[f"metadata:{name}"] == expected, name
    init_op = model_signature_defs["tf_saved_model_save"]["__saved_model_init_op"]
    assert init_op["outputs"]["__saved_model_init_op"] == tensor("NoOp", "DT_INVALID", None)


def test_init_op_signature_cannot_be_run(grpc_calls: dict[str, Any], served: Served) -> None:
    code, message = grpc_calls["predict_init_op"]["error"]
    assert code == "INVALID_ARGUMENT"
    assert message.startswith('Signature "__saved_model_init_op" cannot be run: ')
    status, body = call_rest(
        f"{served.rest}/v1/models/tf_saved_model_save:predict",
        {"signature_name": "__saved_model_init_op", "instances": [1.0]},
    )
    assert status == 400 and body["error"] == message


# -- REST: tensorflow_model_server_test.py -------------------------------------------------------
def test_rest_classify_regress_predict(served: Served) -> None:
    url = f"{served.rest}/v1/models/default"
    req = {"signature_name": "classify_x_to_y", "examples": [{"x": 2.0}]}
    assert call_rest(f"{url}:classify", req) == (200, {"results": [[["", 3.0]]]})
    req = {"signature_name": "regress_x_to_y", "examples": [{"x": 2.0}]}
    assert call_rest(f"{url}:regress", req) == (200, {"results": [3.0]})
    assert call_rest(f"{url}:predict", {"instances": [2.0, 3.0, 4.0]}) == (
        200,
        {"predictions": [3.0, 3.5, 4.0]},
    )
    assert call_rest(f"{url}:predict", {"inputs": [2.0, 3.0, 4.0]}) == (
        200,
        {"outputs": [3.0, 3.5, 4.0]},
    )


def test_rest_status_and_metadata(served: Served, model_signature_defs: dict[str, Any]) -> None:
    url = f"{served.rest}/v1/models"
    assert call_rest(f"{url}/default") == (200, STATUS_OK)
    assert call_rest(f"{url}/default/metadata") == (
        200,
        metadata_json("default", HALF_PLUS_TWO_SIGNATURES),
    )
    for name, directory in MODELS.items():
        status, body = call_rest(f"{url}/{name}/metadata")
        assert status == 200, body
        assert body == metadata_json(name, model_signature_defs[directory]), name


# -- REST: http_rest_api_handler_test.cc ---------------------------------------------------------
def test_rest_handler_predict(served: Served) -> None:
    url = f"{served.rest}/v1/models/{TWO_VERSIONS}"
    assert call_rest(f"{url}:predict", {"instances": [[1.0, 2.0], [3.0, 4.0]]}) == (
        200,
        {"predictions": [[2.5, 3.0], [3.5, 4.0]]},
    )
    for path in ("versions/123", f"labels/{VERSION_LABEL}"):
        assert call_rest(f"{url}/{path}:predict", {"instances": [1.0, 2.0]}) == (
            200,
            {"predictions": [2.5, 3.0]},
        )
    req: dict[str, Any] = {"signature_name": "serving_default", "instances": [3.0, 4.0]}
    assert call_rest(f"{url}/versions/123:predict", req) == (200, {"predictions": [3.5, 4.0]})
    req = {"signature_name": "serving_default", "inputs": [3.0, 4.0]}
    assert call_rest(f"{url}/versions/123:predict", req) == (200, {"outputs": [3.5, 4.0]})
    body = json.dumps(req).encode()
    with urllib.request.urlopen(f"{url}:predict", body, timeout=HTTP_TIMEOUT_S) as response:
        assert response.headers["Content-Type"] == "application/json"


def test_rest_handler_regress_classify(served: Served) -> None:
    url = f"{served.rest}/v1/models/{TWO_VERSIONS}"
    req: dict[str, Any] = {"signature_name": "regress_x_to_y", "examples": [{"x": 80.0}]}
    for path in ("", "/versions/123", f"/labels/{VERSION_LABEL}"):
        assert call_rest(f"{url}{path}:regress", req) == (200, {"results": [42]})
    req = {"signature_name": "classify_x_to_y", "examples": [{"x": 20.0}]}
    assert call_rest(f"{url}:classify", req) == (200, {"results": [[["", 12]]]})
    req = {"signature_name": "classify_x_to_y", "examples": [{"x": 10.0}]}
    assert call_rest(f"{url}/labels/{VERSION_LABEL}:classify", req) == (
        200,
        {"results": [[["", 7]]]},
    )


def test_rest_handler_status_and_metadata(served: Served) -> None:
    url = f"{served.rest}/v1/models/{TWO_VERSIONS}"
    for path in ("", "/versions/123", f"/labels/{VERSION_LABEL}"):
        assert call_rest(f"{url}{path}") == (200, STATUS_OK)
    assert call_rest(f"{url}/metadata") == (
        200,
        metadata_json(TWO_VERSIONS, TWO_VERSIONS_SIGNATURES),
    )


def test_rest_handler_request_errors(served: Served) -> None:
    url = f"{served.rest}/v1/models"
    predict = f"{url}/{TWO_VERSIONS}:predict"

    def error(path: str, **kwargs: Any) -> tuple[int, str]:
        status, body = call_rest(path, **kwargs)
        return status, str(body["error"])

    status, message = error(predict, raw=b"")
    assert status == 400 and "JSON Parse error: The document is empty" in message
    status, message = error(predict, raw=b"instances = [1, 2]")
    # Upstream: rapidjson's "JSON Parse error: Invalid value."; here Python's parser's words.
    assert status == 400 and message.startswith("JSON Parse error: ")
    status, message = error(predict, req={"instances": ["x", "y"]})
    assert status == 400 and "not of expected type: float" in message
    status, message = error(
        f"{url}/{TWO_VERSIONS}/labels/Version_Nonexistent:predict", req={"instances": ["x", "y"]}
    )
    assert status == 400 and "Unrecognized servable version label" in message
    for path in ("foo:predict", "foo/versions/50:predict", f"{TWO_VERSIONS}99:predict"):
        status, _ = error(f"{url}/{path}", req={"instances": [1]})
        assert status == 404, path


# -- the gateway's side of it, in process --------------------------------------------------------
def test_tensorflow_signatures_take_any_input_shape() -> None:
    x = TensorSpec("x", "float32", (-1, 1), tensor_name="x:0")
    y = TensorSpec("y", "float32", (-1, 1), tensor_name="y:0")
    inputs = {"x": np.array([2.0], np.float32)}
    validated(Signature("serving_default", (x,), (y,), check_shapes=False), ConvertedInputs(inputs))
    with pytest.raises(InvalidArgument, match="has shape \\[1\\] but the signature expects"):
        validated(Signature("serving_default", (x,), (y,)), ConvertedInputs(inputs))
    with pytest.raises(InvalidArgument, match="has dtype float64"):
        validated(
            Signature("serving_default", (x,), (y,), check_shapes=False),
            ConvertedInputs({"x": np.array([2.0])}),
        )


def test_unservable_signature_is_listed_verbatim_and_refused() -> None:
    declared = meta_graph_pb2.SignatureDef()
    declared.outputs["__saved_model_init_op"].name = "NoOp"
    declared.outputs["__saved_model_init_op"].tensor_shape.unknown_rank = True
    wire = {
        "inputs": [],
        "outputs": [],
        "method_name": "",
        "unservable": "it is an op, not a tensor",
        "definition": base64.b64encode(declared.SerializeToString()).decode(),
    }
    init_op = Signature.from_wire("__saved_model_init_op", wire, check_shapes=False)
    assert service_messages.signature_def(init_op) == declared
    with pytest.raises(InvalidArgument, match="cannot be run: it is an op, not a tensor"):
        find_signature({init_op.name: init_op}, "__saved_model_init_op")
