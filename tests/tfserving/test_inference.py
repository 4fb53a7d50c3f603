"""Classify, Regress and MultiInference over a real serving core (one ONNX worker): each task runs
as a Predict on its plan, its outputs checked, its lease returned once released."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from gateway._pb.tensorflow.core.example import example_pb2
from gateway._pb.tensorflow_serving.apis import input_pb2
from gateway.config.model_config import ModelSpecConfig
from gateway.errors import InvalidArgument
from gateway.serving.core import ModelRef
from gateway.tfserving.codec.example import ExampleBatch
from gateway.tfserving.inference import ExampleInference, InferenceResult
from gateway.tfserving.inference_plans import CLASSIFY_METHOD, REGRESS_METHOD, InferenceTask
from gateway.tfserving.inference_results import Classifications, Regressions
from tests.support import onnx_models
from tests.support.stack import serving_stack

REF = ModelRef("examples")


def _examples(*rows: tuple[float, int]) -> ExampleBatch:
    request = input_pb2.Input()
    for x, n in rows:
        example = example_pb2.Example()
        example.features.feature["x"].float_list.value.append(x)
        example.features.feature["n"].int64_list.value.append(n)
        request.example_list.examples.append(example)
    return ExampleBatch(request)


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[ExampleInference]:
    """Classify and Regress over a real serving stack serving ``examples``."""
    onnx_models.onnx_examples(tmp_path / "examples" / "1" / "model.onnx")
    spec = ModelSpecConfig(name="examples", base_path=str(tmp_path / "examples"))
    async with serving_stack([spec]) as stack:
        yield ExampleInference(stack.core)


async def test_classify_and_regress_run_as_predicts_on_their_plan(
    tmp_path: Path, service: ExampleInference
) -> None:
    examples = _examples((2.0, 1), (4.0, 0))

    def check_regression(regressed: InferenceResult) -> str:
        assert (regressed.model, regressed.version) == ("examples", 1)
        assert regressed.signature_name == "serving_default"
        assert isinstance(regressed.result, Regressions)
        np.testing.assert_array_equal(regressed.result.values, [4.0, 4.0])
        return "regressed"

    def check_classes(classified: InferenceResult) -> str:
        assert isinstance(classified.result, Classifications)
        assert classified.result.labels is None and classified.result.shape == (2, 2)
        np.testing.assert_array_equal(classified.result.scores, [[4, -4], [4, -4]])
        return "classified"

    assert await service.regress(REF, "", examples, check_regression) == "regressed"
    assert await service.classify(REF, "serving_default", examples, check_classes) == ("classified")


async def test_multi_inference_runs_its_tasks_each_on_its_own_signature(
    tmp_path: Path, service: ExampleInference
) -> None:
    tasks = [InferenceTask(REF, "", REGRESS_METHOD)]
    (result,) = await service.multi_inference(tasks, _examples((0.0, 3)))
    assert isinstance(result.result, Regressions)
    np.testing.assert_array_equal(result.result.values, [5.0])
    assert result.result.values.base is None or result.result.values.flags.writeable  # copies
    with pytest.raises(InvalidArgument, match="Duplicate evaluation of signature"):
        await service.multi_inference(
            [InferenceTask(REF, "", CLASSIFY_METHOD), InferenceTask(REF, "", REGRESS_METHOD)],
            _examples((0.0, 3)),
        )


async def test_no_task_or_no_example_is_refused(tmp_path: Path, service: ExampleInference) -> None:
    with pytest.raises(InvalidArgument, match="MultiInferenceRequest has no tasks"):
        await service.multi_inference([], _examples((1.0, 1)))
    for call in (service.classify, service.regress):
        with pytest.raises(InvalidArgument, match=r"Input is empty\."):
            await call(REF, "", _examples(), lambda result: result)
    tasks = [InferenceTask(REF, "", REGRESS_METHOD)]
    with pytest.raises(InvalidArgument, match=r"Input is empty\."):
        await service.multi_inference(tasks, _examples())
