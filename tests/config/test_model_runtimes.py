"""``--model_runtimes``: its grammar, its errors, and the choice per model and platform."""

from __future__ import annotations

import pytest

from gateway.config.flags import FlagError, parse_flags
from gateway.config.model_runtimes import RuntimeChoice, parse_model_runtimes, runtime_for


def test_runtimes_per_model_and_default() -> None:
    settings = parse_flags(
        [
            "--model_base_path=/m",
            "--model_runtimes=resnet=openvino:bf16, *=openvino,mlp=onnxruntime",
        ]
    )
    choices = settings.model_runtime_choices
    assert choices == {
        "resnet": RuntimeChoice("openvino", "bf16"),
        "*": RuntimeChoice("openvino", "fp32"),  # fp32 unless bf16 is written
        "mlp": RuntimeChoice("onnxruntime"),
    }
    assert runtime_for("other", choices) == RuntimeChoice("openvino", "fp32")
    assert runtime_for("m", parse_model_runtimes("")) is None  # the platform's own
    assert parse_flags(["--model_base_path=/m"]).model_runtime_choices == {}


def test_a_choice_for_a_platform() -> None:
    openvino = RuntimeChoice("openvino", "bf16")
    assert openvino.for_platform("onnx") is openvino
    assert openvino.for_platform("tensorflow") is openvino
    assert RuntimeChoice("onnxruntime").for_platform("onnx") is None
    assert RuntimeChoice("tensorflow").for_platform("tensorflow") is None
    with pytest.raises(ValueError, match="runtime onnxruntime cannot serve tensorflow models"):
        RuntimeChoice("onnxruntime").for_platform("tensorflow")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("resnet", "model_runtimes items are name=runtime, got 'resnet'"),
        ("resnet=tensorrt", "runtime 'tensorrt'; runtimes are onnxruntime, openvino, tensorflow"),
        ("resnet=openvino:fp16", "precision 'fp16'; precisions are fp32, bf16"),
        ("resnet=onnxruntime:bf16", "a precision; only openvino takes one"),
        ("a=openvino,a=onnxruntime", "names a twice"),
    ],
)
def test_bad_values_are_refused(value: str, message: str) -> None:
    with pytest.raises(FlagError, match=message):
        parse_flags(["--model_base_path=/m", f"--model_runtimes={value}"])
