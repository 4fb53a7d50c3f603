"""A small ONNX Runtime runtime for Seldon MLServer 1.7.1 (runs in ``bench/.venvs/mlserver``).

``model-settings.json``: ``"implementation": "mlserver_runtime.OnnxRuntimeModel"``,
``parameters.uri`` = the ``model.onnx`` path, ``parameters.extra.intra_op_threads`` (default 1).
One input, every output returned as FP32 (NumpyCodec). MLServer's adaptive batching, when enabled
in the model settings, concatenates requests along the first axis before :meth:`predict`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
from mlserver import MLModel  # type: ignore[import-not-found]
from mlserver.codecs import NumpyCodec  # type: ignore[import-not-found]
from mlserver.types import InferenceRequest, InferenceResponse  # type: ignore[import-not-found]


class OnnxRuntimeModel(MLModel):  # type: ignore[misc]
    async def load(self) -> bool:
        params = self.settings.parameters
        extra: dict[str, Any] = dict(params.extra or {})
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(extra.get("intra_op_threads", 1))
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(params.uri), options, providers=["CPUExecutionProvider"]
        )
        self._input = self._session.get_inputs()[0].name
        self._outputs = [o.name for o in self._session.get_outputs()]
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        x = NumpyCodec.decode_input(payload.inputs[0]).astype(np.float32, copy=False)
        results = self._session.run(self._outputs, {self._input: x})
        return InferenceResponse(
            model_name=self.name,
            outputs=[
                NumpyCodec.encode_output(name, value)
                for name, value in zip(self._outputs, results, strict=True)
            ],
        )
