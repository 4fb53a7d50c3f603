"""Warmup files → the runs a worker replays: every PredictionLog kind, TF Serving's limits and
error texts, and batch-size runs (no workers here: the pool's replay is tested with real ones)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import prediction_log_pb2
from gateway.errors import Code, ServingError
from gateway.serving.registry import Servable
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.warmup import WarmupPlanner, batch_size_runs
from tests.support import images
from tests.support.warmup_files import predict_log, regress_log, write_warmup

X = TensorSpec("x", "float32", (-1, 4))
ONNX_SIGNATURES = {
    "serving_default": Signature("serving_default", (X,), (TensorSpec("y", "float32", (-1, 2)),))
}
EXAMPLES = TensorSpec("inputs", "float32", None, tensor_name="tf_example:0")
TF_SIGNATURES = {  # saved_model_half_plus_three as TF Serving commits it: Examples "DT_FLOAT"
    "tensorflow/serving/regress": Signature(
        "tensorflow/serving/regress",
        (EXAMPLES,),
        (TensorSpec("outputs", "float32", None),),
        method_name="tensorflow/serving/regress",
        check_shapes=False,
    )
}


def servable(directory: Path, platform: str = "onnx") -> Servable:
    signatures = ONNX_SIGNATURES if platform == "onnx" else TF_SIGNATURES
    return Servable("m", 1, "m:1", platform, signatures, str(directory))


def plan(directory: Path, platform: str = "onnx", **kw: object) -> list:
    return WarmupPlanner(**kw).plan(servable(directory, platform))  # type: ignore[arg-type]


def failure(directory: Path, platform: str = "onnx") -> ServingError:
    with pytest.raises(ServingError) as info:
        plan(directory, platform)
    return info.value


def test_no_file_no_runs(tmp_path: Path) -> None:
    assert plan(tmp_path) == []


def test_predict_records_become_runs_repeated_per_iteration(tmp_path: Path) -> None:
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    write_warmup(tmp_path, [predict_log({"x": x}), predict_log({"x": x[:1]}, outputs=["y"])])
    first, second = plan(tmp_path, iterations=3)
    np.testing.assert_array_equal(first.inputs["x"], x)
    assert (first.signature, first.outputs, first.iterations) == ("serving_default", ("y",), 3)
    assert second.outputs == ("y",) and second.what == "warmup record 1 (predict_log)"


def test_examples_feed_a_tensorflow_signature_whatever_dtype_it_declares(tmp_path: Path) -> None:
    write_warmup(
        tmp_path, [regress_log([{"x": 1.0}, {"x": 2.0}], signature="tensorflow/serving/regress")]
    )
    (run,) = plan(tmp_path, "tensorflow")
    assert run.signature == "tensorflow/serving/regress" and run.outputs == ("outputs",)
    assert run.inputs["inputs"].dtype == object and run.inputs["inputs"].shape == (2,)


def test_multi_inference_gives_one_run_per_task(tmp_path: Path) -> None:
    log = prediction_log_pb2.PredictionLog()
    request = log.multi_inference_log.request
    for method in ("regress", "regress"):
        task = request.tasks.add()
        task.model_spec.name = "m"
        task.model_spec.signature_name = "tensorflow/serving/regress"
        task.method_name = f"tensorflow/serving/{method}"
    request.input.example_list.examples.add().features.feature["x"].float_list.value.append(1.0)
    write_warmup(tmp_path, [log])
    error = failure(tmp_path, "tensorflow")  # TF Serving refuses a signature evaluated twice
    assert error.message.endswith("Duplicate evaluation of signature: tensorflow/serving/regress")
    request.tasks.pop()
    write_warmup(tmp_path, [log])
    assert len(plan(tmp_path, "tensorflow")) == 1


def test_a_mismatched_record_names_itself(tmp_path: Path) -> None:
    x = np.zeros((1, 4), np.float32)
    path = write_warmup(tmp_path, [predict_log({"x": x}), predict_log({"z": x})])
    error = failure(tmp_path)
    assert error.code == Code.INVALID_ARGUMENT
    assert error.message.startswith(f"warmup record 1 (predict_log) in {path}: input size")
    write_warmup(tmp_path, [predict_log({"x": x.astype(np.float64)})])
    assert "has dtype float64" in failure(tmp_path).message


def test_garbage_is_not_a_prediction_log(tmp_path: Path) -> None:
    path = write_warmup(tmp_path, [b"\xff\xff\xff garbage"])
    error = failure(tmp_path)
    assert error.code == Code.INVALID_ARGUMENT
    assert error.message == f"Failed to parse warmup record: b'\\xff\\xff\\xff garbage' from {path}"


def test_a_damaged_file_is_data_loss_as_tf_serving_says(tmp_path: Path) -> None:
    path = write_warmup(tmp_path, [predict_log({"x": np.zeros((1, 4), np.float32)})])
    path.write_bytes(path.read_bytes()[:-3])
    error = failure(tmp_path)
    assert error.code == Code.DATA_LOSS
    assert error.message == (
        "truncated record at 0. Please verify your warmup data is in TFRecord format."
    )


def test_more_than_1000_records_are_refused(tmp_path: Path) -> None:
    record = predict_log({"x": np.zeros((1, 4), np.float32)}).SerializeToString()
    write_warmup(tmp_path, [record] * 1000)
    assert len(plan(tmp_path)) == 1000
    path = write_warmup(tmp_path, [record] * 1001)
    error = failure(tmp_path)
    assert error.message == f"Number of warmup records exceeds the maximum (1000) at {path}"


def test_unsupported_and_empty_records(tmp_path: Path) -> None:
    session_run = prediction_log_pb2.PredictionLog()
    session_run.session_run_log.request.feed.add()
    write_warmup(tmp_path, [prediction_log_pb2.PredictionLog()])  # no log_type: skipped
    assert plan(tmp_path) == []
    write_warmup(tmp_path, [session_run])
    error = failure(tmp_path)
    assert error.code == Code.UNIMPLEMENTED
    assert error.message.endswith("Unsupported log_type for warmup: 5")


def test_batch_size_runs_where_the_shapes_are_known(tmp_path: Path) -> None:
    runs = batch_size_runs(servable(tmp_path), [2, 8])
    assert [r.inputs["x"].shape for r in runs] == [(2, 4), (8, 4)]
    assert all(not r.required and r.inputs["x"].dtype == np.float32 for r in runs)
    assert batch_size_runs(servable(tmp_path, "tensorflow"), [2, 8]) == []  # unknown shapes
    sizes = WarmupPlanner(batch_sizes=lambda _s: (4,)).plan(servable(tmp_path))
    assert [r.inputs["x"].shape for r in sizes] == [(4, 4)]


def test_a_records_encoded_images_are_decoded_as_a_requests(tmp_path: Path) -> None:
    pixels = TensorSpec("images", "float32", (-1, 8, 8, 3))
    signature = Signature(
        "serving_default", (pixels,), (TensorSpec("y", "float32", None),), encoded_images=True
    )
    model = Servable("m", 1, "m:1", "onnx", {"serving_default": signature}, str(tmp_path))
    jpeg = images.encode(images.photo(12, 10))
    strings = np.empty(1, dtype=object)
    strings[0] = jpeg
    write_warmup(tmp_path, [predict_log({"images": strings})])
    (run,) = WarmupPlanner().plan(model)
    assert run.inputs["images"].dtype == np.float32 and run.inputs["images"].shape == (1, 8, 8, 3)
    np.testing.assert_array_equal(run.inputs["images"][0], images.reference(jpeg, size=(8, 8)))
    strings[0] = images.cmyk_jpeg()
    write_warmup(tmp_path, [predict_log({"images": strings})])
    with pytest.raises(ServingError, match=r"warmup record 0 .* image 0 is a CMYK JPEG"):
        WarmupPlanner().plan(model)
