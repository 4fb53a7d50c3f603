"""``python -m gateway.client``: one call to a scripted server, its result as JSON on stdout."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gateway.client.cli import DIGIT_ZERO, main
from gateway.tfserving.codec import tensor_decode
from tests.client.scripted import DIGITS_METADATA, STATUS, Scripted
from tests.support.ort import run_reference
from tests.support.paths import DEMO_MODEL

DIGITS_MODEL = DEMO_MODEL


def test_cli_prints_outputs_as_json(
    scripted: tuple[str, Scripted], capsys: pytest.CaptureFixture[str]
) -> None:
    target, servicer = scripted
    assert main(["--target", target, "--model", "digits", "--version", "3"]) == 0
    assert json.loads(capsys.readouterr().out) == {"label": [7], "sum": [sum(DIGIT_ZERO)]}
    sent = tensor_decode.to_ndarray(servicer.requests[0].inputs["images"], max_elements=64)
    np.testing.assert_array_equal(sent, [DIGIT_ZERO])
    assert main(["--target", target, "--model", "digits", "--call", "status"]) == 0
    assert json.loads(capsys.readouterr().out) == STATUS
    assert main(["--target", target, "--model", "missing"]) == 1
    assert capsys.readouterr().err == "NOT_FOUND: Servable not found for request: Latest(missing)\n"


def test_cli_image_is_a_zero_for_the_demo_model() -> None:
    outputs = run_reference(DIGITS_MODEL, {"images": np.asarray([DIGIT_ZERO], dtype=np.float32)})
    assert outputs["label"].tolist() == [0]


def test_cli_prints_metadata_and_bytes_as_rest_does(
    scripted: tuple[str, Scripted], capsys: pytest.CaptureFixture[str]
) -> None:
    target, servicer = scripted
    assert main(["--target", target, "--call", "metadata", "--version", "1"]) == 0
    assert json.loads(capsys.readouterr().out) == DIGITS_METADATA
    assert servicer.requests[-1].model_spec.version.value == 1
    assert main(["--target", target, "--model", "strings"]) == 0
    assert json.loads(capsys.readouterr().out) == {"text": [{"b64": "AP8="}]}  # b"\x00\xff"


def test_cli_sends_the_image_as_the_named_input_of_the_named_signature(
    scripted: tuple[str, Scripted], capsys: pytest.CaptureFixture[str]
) -> None:
    target, servicer = scripted
    argv = [
        "--target",
        target,
        "--input_name",
        "images",
        "--signature_name",
        "sig",
        "--timeout",
        "5",
    ]
    assert main(argv) == 0
    capsys.readouterr()
    sent = servicer.requests[-1]
    assert sent.model_spec.name == "digits" and sent.model_spec.signature_name == "sig"
    assert not sent.model_spec.HasField("version")  # the latest
    assert list(sent.inputs) == ["images"]
    assert servicer.deadlines[-1] is not None and 0 < servicer.deadlines[-1] <= 5.5
