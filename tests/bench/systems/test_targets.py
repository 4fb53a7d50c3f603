"""bench.systems.targets: what the load generators send each kind of system, and the context."""

from __future__ import annotations

from pathlib import Path

from bench.load import h2load
from bench.systems.targets import Context, SystemSpec, Target


def test_a_grpc_target_is_sent_as_one_grpc_frame_with_grpc_s_headers() -> None:
    target = Target("grpc", "127.0.0.1:8500", "/tensorflow.serving.PredictionService/Predict", b"m")
    assert target.url == "http://127.0.0.1:8500/tensorflow.serving.PredictionService/Predict"
    assert target.h2_body == b"\x00\x00\x00\x00\x01m"
    assert target.h2load_headers == h2load.GRPC_HEADERS
    assert target.http_headers == ()


def test_an_http_target_sends_its_body_with_its_headers() -> None:
    target = Target(
        "http", "http://127.0.0.1:9", "/infer", b"{}", "application/json", (("x-a", "1"),)
    )
    assert target.url == "http://127.0.0.1:9/infer"
    assert target.h2_body == b"{}"
    assert target.http_headers == (("content-type", "application/json"), ("x-a", "1"))
    assert target.h2load_headers == ("content-type: application/json", "x-a: 1")


def test_the_context_builds_each_payload_once_and_places_models_and_logs(tmp_path: Path) -> None:
    ctx = Context(tmp_path / "models", tmp_path / "logs")
    built: list[int] = []

    def build() -> bytes:
        built.append(1)
        return b"payload"

    assert ctx.payload(("predict", "mlp"), build) == b"payload"
    assert ctx.payload(("predict", "mlp"), build) == b"payload"
    assert built == [1]
    assert ctx.model_file("mlp") == tmp_path / "models" / "mlp" / "1" / "model.onnx"
    assert ctx.model_dir("mlp") == tmp_path / "models" / "mlp"
    assert ctx.log_path(SystemSpec("echo", "echo"), "mlp") == tmp_path / "logs" / "echo-mlp.log"
    assert len(ctx.raw_input("mlp")) == 64 * 4  # one float32 row
