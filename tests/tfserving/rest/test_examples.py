"""REST ``:classify`` / ``:regress`` as TF Serving writes them: the handler over a real core (one
ONNX worker), and the JSON of classifications in process (written as the route writes it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import NotFound
from gateway.serving.core import ModelRef
from gateway.tfserving.inference_results import Classifications
from gateway.tfserving.rest.examples import ClassifyRegressHandler, classifications_json
from gateway.tfserving.rest.json_response import dumps
from tests.support import onnx_models
from tests.support.stack import serving_stack


async def test_the_handler_answers_classify_and_regress_with_tf_serving_s_json(
    tmp_path: Path,
) -> None:
    onnx_models.onnx_examples(tmp_path / "examples" / "1" / "model.onnx")
    spec = ModelSpecConfig(name="examples", base_path=str(tmp_path / "examples"))
    body = {"examples": [{"x": 2.0, "n": 1}, {"x": 4.0, "n": 0}]}

    async with serving_stack([spec]) as stack:
        handler = ClassifyRegressHandler(stack.core)
        ref = ModelRef("examples")
        answers = [await handler(m, ref, body, None) for m in ("classify", "regress")]
        with pytest.raises(NotFound, match="unknown method :predict"):
            await handler("predict", ref, body, None)
        classified, regressed = [dumps(answer) for answer in answers]
    assert regressed == b'{"results":[4.0,4.0]}'
    assert json.loads(classified) == {"results": [[["", 4.0], ["", -4.0]], [["", 4.0], ["", -4.0]]]}


def _json(result: Classifications) -> Any:
    return dumps(classifications_json(result))


def test_classifications_are_label_score_pairs_with_tf_serving_s_defaults() -> None:
    labels = np.array([[b"a", b"\xff"]], dtype=object)
    scores = np.array([[0.1, np.nan]], np.float32)
    assert _json(Classifications(labels, scores)) == b'[[["a",0.1],["\xef\xbf\xbd",NaN]]]'
    assert _json(Classifications(labels, None)) == b'[[["a",0.0],["\xef\xbf\xbd",0.0]]]'
    infinite = np.array([[np.inf, -np.inf]], np.float32)
    assert _json(Classifications(None, infinite)) == b'[[["",Infinity],["",-Infinity]]]'
