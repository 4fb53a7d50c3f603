"""REST ``:classify`` and ``:regress``: TF Serving's JSON in and out, over
:mod:`gateway.tfserving.inference`.

The request body is described in :mod:`gateway.tfserving.codec.example`. Responses, as TF Serving
writes them (``util/json_tensor.cc``)::

    classify → {"results": [[["label", score], ...], ...]}   one list of [label, score] per example
    regress  → {"results": [value, ...]}                      one value per example

A missing label is ``""`` and a missing score ``0.0`` (the proto defaults TF Serving prints);
scores and values are float32 in their shortest round-trip form, non-finite ones as ``NaN`` /
``Infinity`` / ``-Infinity``. Labels that are not UTF-8 are decoded with replacement characters.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import orjson

from gateway.errors import NotFound
from gateway.observability.request_log import REST_LOG, LogSlot
from gateway.serving.core import ModelRef, ServingCore
from gateway.tfserving.codec import example as example_codec
from gateway.tfserving.codec.example import ExampleBatch
from gateway.tfserving.inference import ExampleInference, InferenceResult
from gateway.tfserving.inference_results import Classifications
from gateway.tfserving.prediction_log import (
    REST_EXAMPLES,
    ExamplesRequest,
    input_nbytes,
    owned,
    result_nbytes,
)
from gateway.tfserving.rest import json_request

RESULTS_KEY: Final = "results"


class ClassifyRegressHandler:
    """The REST server's ``classify_regress`` hook: ``await handler(method, ref, body,
    deadline)`` with ``method`` ``"classify"`` or ``"regress"``, the parsed JSON ``body`` and a
    ``time.monotonic()`` ``deadline`` (None: none) returns the JSON-able response; failures raise
    ServingError."""

    def __init__(self, core: ServingCore, *, method_name_check: bool = False) -> None:
        self._inference = ExampleInference(core, method_name_check=method_name_check)

    async def __call__(
        self, method: str, ref: ModelRef, body: Mapping[str, Any], deadline: float | None
    ) -> dict[str, Any]:
        if method not in ("classify", "regress"):
            raise NotFound(f"unknown method :{method}")
        name = json_request.signature_name(body)
        proto = example_codec.input_from_json(body)
        examples = ExampleBatch(proto)
        encode = _json_able
        logged = REST_LOG.get()  # this call's record to be, when the request log sampled it
        if logged is not None:
            asked = ExamplesRequest(ref, name, proto)
            encode = functools.partial(_logged, logged, method, asked)
        if method == "classify":
            return await self._inference.classify(ref, name, examples, encode, deadline)
        return await self._inference.regress(ref, name, examples, encode, deadline)


def _logged(
    slot: LogSlot, method: str, request: ExamplesRequest, result: InferenceResult
) -> dict[str, Any]:
    """The answer, and the call left in ``slot`` as its gRPC twin will be logged."""
    answer = owned(result)
    nbytes = input_nbytes(request.input) + result_nbytes(answer)
    slot.fill(REST_EXAMPLES[method], request, answer, nbytes)
    return _json_able(result)


def _json_able(result: InferenceResult) -> dict[str, Any]:
    """The response body (copies: the worker's output space goes back once it is built)."""
    if isinstance(result.result, Classifications):
        return {RESULTS_KEY: classifications_json(result.result)}
    return {RESULTS_KEY: _floats(result.result.values)}


def classifications_json(result: Classifications) -> list[list[list[Any]]]:
    """``[[[label, score], ...], ...]``: per example, its classes."""
    n, k = result.shape
    labels = result.labels.tolist() if result.labels is not None else [[b""] * k] * n
    scores = result.scores if result.scores is not None else np.zeros((n, k), np.float32)
    return [
        [[_text(label), score] for label, score in zip(row, _floats(scores[i]), strict=True)]
        for i, row in enumerate(labels)
    ]


def _floats(values: np.ndarray) -> list[Any]:
    """float32 values that orjson writes in float32's shortest form (non-finite as literals)."""
    return [
        value if math.isfinite(value) else orjson.Fragment(_non_finite(float(value)))
        for value in values.astype(np.float32, copy=False)
    ]


def _non_finite(value: float) -> bytes:
    if math.isnan(value):
        return b"NaN"
    return b"Infinity" if value > 0 else b"-Infinity"


def _text(label: bytes | str) -> str:
    return label.decode("utf-8", "replace") if isinstance(label, bytes) else label
