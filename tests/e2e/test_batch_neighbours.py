"""One caller never hurts another: a request whose string values an ONNX model cannot take fails
alone, never the batch it would have joined.

The model ``held`` (a string identity, ``x`` [-1, -1] → ``y``) closes a batch only at 2 rows (a
10-minute timeout), so which requests share a run is a fact, not a race. A valid caller ``a`` is
queued first; a caller sending ``b"\\xff\\xfe"`` comes next and is answered; only then does a
second valid caller ``b`` come. Had the bad value joined ``a``'s batch (as it did: the worker
decoded the merged batch and failed the run, ``a`` included), ``a`` would fail and ``b`` would
wait alone; refused before it is queued, it leaves ``a`` and ``b`` one run of 2 rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import grpc
import numpy as np
import pytest

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway._pb.inference import grpc_service_pb2_grpc as pb_grpc
from gateway.v2 import raw
from gateway.v2.datatypes import lookup
from gateway.v2.declared import Limits, declare_input
from tests.support import onnx_models
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.triton_gateway import sample, scrape

HELD = "max_batch_size { value: 2 }\nbatch_timeout_micros { value: 600000000 }\n"
DEADLINE_S = 30


@pytest.fixture(scope="module")
def neighbours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("neighbours")
    onnx_models.identity(root / "held" / "1" / "model.onnx", "string")
    (root / "held" / "1" / "batching_params.pbtxt").write_text(HELD)
    (root / "batching.config").write_text(HELD)
    (root / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    args = [
        "--model_name=held",
        f"--model_base_path={root / 'held'}",
        "--workers=1",
        "--inline_runs=never",  # runs go to the workers this test observes
        "--enable_batching",
        f"--batching_parameters_file={root / 'batching.config'}",
        "--enable_per_model_batching_parameters",
        f"--monitoring_config_file={root / 'monitoring.config'}",
        "--rest_api_port=-1",
    ]
    with running_gateway(args, root) as process:
        yield process


def _infer(value: bytes) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="held", id=repr(value))
    request.inputs.add(name="x", datatype="BYTES", shape=[1, 1])
    strings = np.array([[value]], dtype=object)
    request.raw_input_contents.append(raw.to_raw(strings, lookup("BYTES")))
    return request


def _strings(response: pb.ModelInferResponse) -> list[bytes]:
    declared = declare_input("y", "BYTES", (1, 1), Limits(1))
    return raw.from_raw(declared, response.raw_output_contents[0]).ravel().tolist()


async def test_a_bad_string_fails_only_its_own_request(neighbours: GatewayProcess) -> None:
    before = scrape(neighbours)

    async with grpc.aio.insecure_channel(neighbours.target) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        first = asyncio.ensure_future(stub.ModelInfer(_infer(b"a"), timeout=DEADLINE_S))
        bad = await asyncio.gather(
            stub.ModelInfer(_infer(b"\xff\xfe"), timeout=DEADLINE_S), return_exceptions=True
        )
        second = stub.ModelInfer(_infer(b"b"), timeout=DEADLINE_S)
        refused, first, second = [
            *bad,
            *await asyncio.gather(first, second, return_exceptions=True),
        ]
    after = scrape(neighbours)
    assert isinstance(refused, grpc.RpcError), refused
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "string input 'x' is not valid UTF-8" in str(refused.details())
    assert isinstance(first, pb.ModelInferResponse), first
    assert isinstance(second, pb.ModelInferResponse), second
    assert (_strings(first), _strings(second)) == ([b"a"], [b"b"])
    runs = sample(after, "tensorgate_worker_runs_total") - sample(
        before, "tensorgate_worker_runs_total"
    )
    assert runs == 1  # a and b: one run of 2 rows
    assert (
        sample(after, "tensorgate_batch_size_sum", model_name="held")
        - sample(before, "tensorgate_batch_size_sum", model_name="held")
        == 2
    )
