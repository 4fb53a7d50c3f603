"""gateway.client.convert: requests built from plain Python, responses read back as plain
Python."""

from __future__ import annotations

import numpy as np
import pytest

from gateway._pb.tensorflow.core.framework import types_pb2
from gateway._pb.tensorflow.core.protobuf import meta_graph_pb2
from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    predict_pb2,
)
from gateway.client import metadata_dict, predict_request, status_list
from gateway.client.convert import (
    metadata_request,
    model_spec,
    model_spec_dict,
    predict_outputs,
    status_request,
)
from gateway.errors import InvalidArgument
from gateway.tfserving.codec import tensor_decode, tensor_encode
from tests.client.scripted import DIGITS_METADATA, STATUS, digits_metadata, status_response


def test_metadata_dict_decodes_signature_def_map() -> None:
    assert metadata_dict(digits_metadata()) == DIGITS_METADATA


def test_metadata_dict_without_signature_def_and_with_label() -> None:
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.model_spec.name = "m"
    response.model_spec.version_label = "stable"
    response.model_spec.signature_name = "sig"
    assert metadata_dict(response) == {
        "model_spec": {
            "name": "m",
            "version": None,
            "version_label": "stable",
            "signature_name": "sig",
        },
        "signature_def": {},
    }


def test_metadata_dict_rejects_a_foreign_any() -> None:
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.metadata["signature_def"].Pack(get_model_status_pb2.GetModelStatusResponse())
    with pytest.raises(ValueError, match=r"tensorflow\.serving\.GetModelStatusResponse"):
        metadata_dict(response)


def test_status_list_names_states_and_codes() -> None:
    assert status_list(status_response()) == STATUS


def test_predict_request_sends_numbers_as_tensor_content_and_strings_typed() -> None:
    images = np.arange(128, dtype=np.float32).reshape(2, 64)
    request = predict_request(
        "digits",
        {
            "images": images,
            "names": np.array(["a", b"b"], dtype=object),
            "flags": np.array([True, False]),
        },
        version_label="canary",
        output_filter=["label"],
    )
    assert request.model_spec.name == "digits"
    assert request.model_spec.version_label == "canary"
    assert request.model_spec.signature_name == "serving_default"
    assert list(request.output_filter) == ["label"]
    assert request.inputs["images"].tensor_content == images.tobytes()
    assert not request.inputs["images"].float_val
    assert request.inputs["flags"].tensor_content == b"\x01\x00"
    assert list(request.inputs["names"].string_val) == [b"a", b"b"]
    decoded = tensor_decode.to_ndarray(request.inputs["images"], max_elements=128)
    np.testing.assert_array_equal(decoded, images)


def test_predict_request_version_and_label_are_exclusive() -> None:
    with pytest.raises(ValueError, match="not both"):
        predict_request("m", {}, version=1, version_label="stable")


def test_predict_request_rejects_unsupported_dtype() -> None:
    with pytest.raises(InvalidArgument):
        predict_request("m", {"x": np.zeros(2, dtype=np.dtype("datetime64[s]"))})


def test_model_spec_version_label_or_latest() -> None:
    latest = model_spec("m")
    assert latest.WhichOneof("version_choice") is None and latest.signature_name == ""
    assert model_spec("m", version=3, signature_name="s").version.value == 3
    assert model_spec("m", version_label="stable").version_label == "stable"
    assert model_spec_dict(model_spec("m", version=0)) == {
        "name": "m",
        "version": 0,
        "version_label": None,
        "signature_name": "",
    }
    with pytest.raises(ValueError, match="give version or version_label, not both"):
        model_spec("m", version=1, version_label="stable")


def test_metadata_and_status_requests() -> None:
    metadata = metadata_request("digits", version=2)
    assert list(metadata.metadata_field) == ["signature_def"]
    assert metadata.model_spec.version.value == 2
    every = status_request("digits")
    assert every.model_spec.name == "digits" and not every.model_spec.HasField("version")
    assert status_request("digits", version=4).model_spec.version.value == 4


def test_outputs_are_decoded_within_the_element_bound() -> None:
    response = predict_pb2.PredictResponse()
    response.outputs["y"].CopyFrom(tensor_encode.from_ndarray(np.arange(6).reshape(2, 3)))
    outputs = predict_outputs(response, max_elements=6)
    assert outputs["y"].tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(InvalidArgument, match="has 6 elements, over the limit of 5"):
        predict_outputs(response, max_elements=5)


def test_metadata_names_non_tensor_dtypes_by_their_enum() -> None:
    signature = meta_graph_pb2.SignatureDef()
    signature.inputs["handle"].dtype = types_pb2.DT_VARIANT
    signature.outputs["odd"].dtype = types_pb2.DataType.ValueType(999)
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    signature_map.signature_def["s"].CopyFrom(signature)
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.metadata["signature_def"].Pack(signature_map)
    read = metadata_dict(response)["signature_def"]["s"]
    assert read["inputs"]["handle"] == {"dtype": "DT_VARIANT", "shape": []}
    assert read["outputs"]["odd"]["dtype"] == "999"


def test_status_keeps_unknown_states_and_codes_as_numbers() -> None:
    response = get_model_status_pb2.GetModelStatusResponse()
    entry = response.model_version_status.add(version=1)
    entry.state = get_model_status_pb2.ModelVersionStatus.State.ValueType(77)
    entry.status.error_code = 99  # type: ignore[assignment]  # a code the enum does not name
    (read,) = status_list(response)
    assert (read["state"], read["status"]["error_code"]) == ("77", "99")
