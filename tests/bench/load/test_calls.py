"""bench.load.calls: ghz's --call names, JSON requests, durations."""

from __future__ import annotations

import pytest

from bench.load.calls import method_path, parse_duration, request_from_json
from gateway._pb.tensorflow_serving.apis import get_model_metadata_pb2


@pytest.mark.parametrize(
    "call",
    [
        "tensorflow.serving.PredictionService.Predict",
        "tensorflow.serving.PredictionService/Predict",
        "/tensorflow.serving.PredictionService/Predict",
    ],
)
def test_method_path_accepts_ghz_spellings(call: str) -> None:
    assert method_path(call) == "/tensorflow.serving.PredictionService/Predict"


def test_method_path_needs_a_service() -> None:
    with pytest.raises(ValueError, match=r"package\.Service\.Method"):
        method_path("Predict")


def test_request_from_json_builds_the_method_input_message() -> None:
    data = request_from_json(
        "tensorflow.serving.PredictionService.GetModelMetadata",
        '{"model_spec": {"name": "mlp"}, "metadata_field": ["signature_def"]}',
    )
    message = get_model_metadata_pb2.GetModelMetadataRequest.FromString(data)
    assert message.model_spec.name == "mlp"
    assert list(message.metadata_field) == ["signature_def"]


@pytest.mark.parametrize(
    ("call", "text", "match"),
    [
        ("no.such.Service.Method", "{}", "unknown service"),
        ("tensorflow.serving.PredictionService.Nope", "{}", "no method"),
        ("tensorflow.serving.PredictionService.Predict", '{"bogus": 1}', "bad request JSON"),
    ],
)
def test_request_from_json_errors(call: str, text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        request_from_json(call, text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10.0), ("500ms", 0.5), ("1m30s", 90.0), ("2.5", 2.5), ("250us", 250e-6), ("1h", 3600)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10x", "s", "-1", "5s garbage"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
