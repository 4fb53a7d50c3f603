"""TF Serving's model warmup: ``assets.extra/tf_serving_warmup_requests`` → runs for the workers.

TF Serving replays each record of that file (a TFRecord of ``PredictionLog``) against a version
while it loads, before it serves (``servables/tensorflow/saved_model_warmup*.cc``); tensorgate does
the same for TensorFlow and ONNX versions alike. Here each record is read and decoded the way the
matching RPC would decode it — predict, classify, regress, or each task of multi_inference, with
the same validation and error texts — into a :class:`~gateway.worker_channel.warmup_runs.WarmupRun`
that the worker pool replays on every worker hosting the version (the worker imports no protobuf, so
decoding happens here). Rules, as TF Serving:

- no file: nothing to replay; each record is replayed ``iterations`` times
  (``--num_request_iterations_for_warmup``, 0 → 1);
- more than 1000 records, a record that is not a PredictionLog, a damaged TFRecord (DATA_LOSS,
  "... Please verify your warmup data is in TFRecord format."), a request that does not fit the
  version's signatures, or a failing run: the load fails with that error;
- a predict record's encoded images (a JPEG/PNG string tensor for an ONNX model's image input)
  are decoded as a request's would be (:mod:`gateway.images`), so a warmup file written for a
  model that decodes its own images replays here too;
- ``session_run_log`` and ``predict_streamed_log`` are UNIMPLEMENTED ("Unsupported log_type for
  warmup: N"); a record with no log set is skipped. The request's model name is not looked at.

tensorgate adds, with batching on, one run of each ``allowed_batch_sizes`` per signature whose
inputs are numeric with every dimension but the first known (zeros; its failure is only logged).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from google.protobuf import message

from channel.dtypes import STRING, numpy_dtype
from gateway._pb.tensorflow_serving.apis import prediction_log_pb2
from gateway.batching.policy import BatchingPolicy
from gateway.config.model_config import ConfigError
from gateway.config.settings import Settings
from gateway.errors import Code, FailedPrecondition, InvalidArgument, ServingError, Unimplemented
from gateway.images.image_tensors import decode_inputs
from gateway.images.options import ImageLimits, read_options
from gateway.serving.inputs import carries_images, converted_inputs, validated
from gateway.serving.registry import Servable
from gateway.serving.signature import Signature, find_signature
from gateway.tfserving.codec import inference_messages, service_messages, tfrecord
from gateway.tfserving.codec.example import ExampleBatch
from gateway.tfserving.inference_plans import (
    CLASSIFY_METHOD,
    REGRESS_METHOD,
    TaskPlan,
    multi_inference_plans,
    single_plan,
)
from gateway.worker_channel.warmup_runs import WarmupRun

WARMUP_FILE: Final = os.path.join("assets.extra", "tf_serving_warmup_requests")
MAX_RECORDS: Final = 1000


@dataclass(frozen=True)
class WarmupPlanner:
    """The model manager's ``warmup`` hook: the runs of a version being loaded.

    ``iterations``: replays per record (>= 1). ``max_elements`` / ``max_bytes``: the request
    limits on a tensor's elements and a request's decoded bytes (``--max_tensor_elements``,
    ``--max_request_bytes``). ``batch_sizes``: a servable's ``allowed_batch_sizes`` when
    batching is on (empty otherwise).
    """

    iterations: int = 1
    max_elements: int = 2**24
    max_bytes: int = 2**26
    method_name_check: bool = False
    batch_sizes: Callable[[Servable], Sequence[int]] = lambda _servable: ()

    @classmethod
    def from_settings(cls, settings: Settings, policy: BatchingPolicy) -> WarmupPlanner | None:
        """The planner the flags ask for; None with ``--enable_model_warmup=false``."""
        if not settings.enable_model_warmup:
            return None
        return cls(
            iterations=max(1, settings.num_request_iterations_for_warmup),
            max_elements=settings.max_tensor_elements,
            max_bytes=settings.max_request_bytes,
            method_name_check=settings.enable_signature_method_name_check,
            batch_sizes=policy.warmup_batch_sizes,
        )

    async def __call__(self, servable: Servable) -> list[WarmupRun]:
        """Read and decode off the event loop (the file may be large)."""
        return await asyncio.to_thread(self.plan, servable)

    def plan(self, servable: Servable) -> list[WarmupRun]:
        path = os.path.join(servable.directory, WARMUP_FILE)
        runs = [] if not os.path.isfile(path) else self.record_runs(servable, path)
        return runs + batch_size_runs(servable, self.batch_sizes(servable))

    def record_runs(self, servable: Servable, path: str) -> list[WarmupRun]:
        """The runs of every record of the warmup file at ``path``."""
        runs: list[WarmupRun] = []
        try:
            with open(path, "rb") as stream:
                for index, record in enumerate(tfrecord.read_records(stream)):
                    if index == MAX_RECORDS:
                        raise InvalidArgument(
                            f"Number of warmup records exceeds the maximum ({MAX_RECORDS}) "
                            f"at {path}"
                        )
                    runs += self._record(servable, path, index, record)
        except OSError as exc:
            raise ServingError(f"cannot read {path}: {exc.strerror}", Code.UNKNOWN) from None
        except ServingError as exc:
            if exc.code == Code.DATA_LOSS:
                raise tfrecord.data_loss(
                    f"{exc.message}. Please verify your warmup data is in TFRecord format."
                ) from None
            raise
        return runs

    def _record(self, servable: Servable, path: str, index: int, record: bytes) -> list[WarmupRun]:
        try:
            log = prediction_log_pb2.PredictionLog.FromString(record)
        except message.DecodeError:
            shown = record[:64]
            raise InvalidArgument(f"Failed to parse warmup record: {shown!r} from {path}") from None
        kind = log.WhichOneof("log_type")
        what = f"warmup record {index} ({kind})"
        try:
            return self._runs(servable, log, kind, what)
        except ServingError as exc:
            raise type(exc)(f"{what} in {path}: {exc.message}", exc.code) from None

    def _runs(
        self, servable: Servable, log: prediction_log_pb2.PredictionLog, kind: str | None, what: str
    ) -> list[WarmupRun]:
        if kind is None:
            return []
        if kind == "predict_log":
            predict = log.predict_log.request
            signature = find_signature(servable.signatures, predict.model_spec.signature_name)
            inputs = validated(
                signature,
                service_messages.PredictInputs(
                    predict, signature, max_elements=self.max_elements, max_bytes=self.max_bytes
                ),
            )
            if signature.image_inputs and carries_images(signature, inputs):
                inputs = self._images(servable, signature, inputs)
            outputs = tuple(signature.select_outputs(list(predict.output_filter)))
            return [WarmupRun(signature.name, inputs, outputs, self.iterations, what)]
        if kind in ("classify_log", "regress_log"):
            request = getattr(log, kind).request
            method = CLASSIFY_METHOD if kind == "classify_log" else REGRESS_METHOD
            plan = single_plan(
                servable,
                request.model_spec.signature_name,
                method,
                method_name_check=self.method_name_check,
            )
            return [self._example_run(plan, inference_messages.examples(request.input), what)]
        if kind == "multi_inference_log":
            multi = log.multi_inference_log.request
            if not multi.tasks:
                raise InvalidArgument("MultiInferenceRequest has no tasks")
            plans = multi_inference_plans(
                servable, inference_messages.tasks(multi), method_name_check=self.method_name_check
            )
            examples = inference_messages.examples(multi.input)
            return [self._example_run(plan, examples, what) for plan in plans]
        number = prediction_log_pb2.PredictionLog.DESCRIPTOR.fields_by_name[kind].number
        raise Unimplemented(f"Unsupported log_type for warmup: {number}")

    def _images(
        self, servable: Servable, signature: Signature, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """A record's encoded images decoded as a request's are (we are off the loop already)."""
        try:
            options = read_options(servable.directory)
        except ConfigError as exc:
            raise FailedPrecondition(str(exc)) from None
        limits = ImageLimits(max_bytes=self.max_bytes)
        return decode_inputs(signature.image_specs(), inputs, options, limits)

    def _example_run(self, plan: TaskPlan, examples: ExampleBatch, what: str) -> WarmupRun:
        if examples.count == 0:
            raise InvalidArgument("Input is empty.")
        inputs = validated(
            plan.signature,
            converted_inputs(plan.feed(examples)),
            check_dtypes=plan.input_spec is None,
        )
        return WarmupRun(plan.signature.name, inputs, plan.outputs, self.iterations, what)


def batch_size_runs(servable: Servable, sizes: Sequence[int]) -> list[WarmupRun]:
    """One run of zeros per allowed batch size for each signature whose inputs allow it."""
    runs: list[WarmupRun] = []
    for signature in servable.signatures.values():
        specs = signature.inputs
        if signature.unservable or not specs:
            continue
        if any(s.dtype == STRING or not s.shape or any(d < 0 for d in s.shape[1:]) for s in specs):
            continue
        for size in sizes:
            inputs = {
                s.name: np.zeros((size, *(s.shape or ())[1:]), numpy_dtype(s.dtype)) for s in specs
            }
            what = f"batch size {size} warmup of signature {signature.name}"
            runs.append(WarmupRun(signature.name, inputs, None, 1, what, required=False))
    return runs
