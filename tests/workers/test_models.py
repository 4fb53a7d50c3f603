"""The loaders by platform: an ONNX file becomes a :class:`Model` with one signature; a
TensorFlow load reads the request's path and tags."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from channel.messages import LoadRequest, WorkerError, load_request
from tests.support.ort import run_reference
from tests.support.paths import DEMO_MODEL
from workers.models import LOADERS, RUNTIME_LOADERS, loader_for


def test_every_served_platform_has_a_loader() -> None:
    assert set(LOADERS) == {"onnx", "tensorflow"}


@pytest.mark.parametrize("platform", ["onnx", "tensorflow"])
def test_the_loader_is_the_chosen_runtimes_else_the_platforms(platform: str) -> None:
    def request(**chosen: str) -> LoadRequest:
        return load_request(
            3, key="m:1", path="/m", platform=platform, intra_op=1, inter_op=1, **chosen
        )

    assert loader_for(request()) is LOADERS[platform]
    assert loader_for(request(runtime="openvino")) is RUNTIME_LOADERS["openvino"]
    with pytest.raises(WorkerError) as raised:
        loader_for(request(runtime="tensorrt"))
    assert raised.value.code == "UNIMPLEMENTED"
    assert "runtime 'tensorrt'" in raised.value.message and "openvino" in raised.value.message


def test_an_unknown_platform_has_no_loader() -> None:
    request = load_request(4, key="m:1", path="/m", platform="pytorch", intra_op=1, inter_op=1)
    with pytest.raises(WorkerError) as raised:
        loader_for(request)
    assert raised.value.code == "UNIMPLEMENTED" and "platform 'pytorch'" in raised.value.message


def test_an_onnx_model_serves_text_strings_under_any_signature_name() -> None:
    request = load_request(
        1, key="digits:1", path=str(DEMO_MODEL), platform="onnx", intra_op=1, inter_op=1
    )
    model = LOADERS["onnx"](request, 2**20)
    try:
        assert model.path == str(DEMO_MODEL)
        assert model.text_strings  # ONNX Runtime takes str, not bytes
        assert [spec["name"] for spec in model.signature["inputs"]] == ["images"]
        images = np.zeros((2, 64), np.float32)
        expected = run_reference(DEMO_MODEL, {"images": images})
        for name in ("", "serving_default", "any"):  # one signature: the name is not used
            outputs = model.run({"images": images}, ["label"], name)
            assert list(outputs) == ["label"]
            np.testing.assert_array_equal(outputs["label"], expected["label"])
    finally:
        model.close()


def test_a_tensorflow_load_looks_where_the_request_says(tmp_path: Path) -> None:
    request = load_request(
        2,
        key="t:1",
        path=str(tmp_path),
        platform="tensorflow",
        intra_op=1,
        inter_op=1,
        tags=("serve", "gpu"),
    )
    with pytest.raises(WorkerError) as raised:
        LOADERS["tensorflow"](request, 2**20)  # no SavedModel there: refused before TF is imported
    assert raised.value.code == "NOT_FOUND"
    assert raised.value.message.endswith(f"export directory path: {tmp_path}")
