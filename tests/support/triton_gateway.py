"""One real gateway for the Open Inference Protocol's end-to-end tests (``tests/e2e/test_v2.py``,
``test_v2_errors.py``), and the calls they make against it.

The session fixture :func:`v2_gateway` serves, with batching, metrics, REST and
``--enable_model_management_api``:

- ``mlp`` versions 1 and 2 (labels ``stable`` → 1, ``canary`` → 2): x FP32 [-1, 64] → logits,
  probs FP32 [-1, 10];
- ``identities``: one identity per datatype, ``in_<dtype>`` [-1, -1] → ``out_<dtype>``;
- ``held``: an ``mlp`` whose batches close only at 2 rows (its own ``batching_params.pbtxt``:
  a 10-minute timeout), so a request waits there until a second one joins it or its deadline
  passes — "in flight" and "shared a batch" are facts, not races;
- ``spare``: ``add_two`` (a, b FP32 [-1, 3] → sum, diff), for repository load and unload.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support import onnx_models, triton_client
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.rest import http

METRICS = "/monitoring/prometheus/metrics"
HELD_PARAMS = "max_batch_size { value: 2 }\nbatch_timeout_micros { value: 600000000 }\n"


def v2_repo(root: Path) -> Path:
    """The models above and ``models.config`` serving them."""
    onnx_models.mlp(root / "mlp" / "1" / "model.onnx", seed=1)
    onnx_models.mlp(root / "mlp" / "2" / "model.onnx", seed=2)
    onnx_models.identities(root / "identities" / "1" / "model.onnx")
    onnx_models.mlp(root / "held" / "1" / "model.onnx", seed=3)
    (root / "held" / "1" / "batching_params.pbtxt").write_text(HELD_PARAMS)
    onnx_models.add_two(root / "spare" / "1" / "model.onnx")
    entries = "\n".join(
        f'  config {{ name: "{name}" base_path: "{root / name}"{extra} }}'
        for name, extra in (
            (
                "mlp",
                " model_version_policy { all {} }"
                ' version_labels { key: "stable" value: 1 }'
                ' version_labels { key: "canary" value: 2 }',
            ),
            ("identities", ""),
            ("held", ""),
            ("spare", ""),
        )
    )
    (root / "models.config").write_text(f"model_config_list {{\n{entries}\n}}\n")
    (root / "batching.config").write_text(
        "max_batch_size { value: 64 }\nbatch_timeout_micros { value: 0 }\n"
        "max_enqueued_batches { value: 100 }\n"
    )
    (root / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    return root


@dataclass(frozen=True)
class V2Gateway:
    """The gateway process and the models it serves."""

    process: GatewayProcess
    models: Path

    def model(self, name: str, version: int) -> Path:
        return self.models / name / str(version) / "model.onnx"


@pytest.fixture(scope="session")
def v2_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[V2Gateway]:
    root = v2_repo(tmp_path_factory.mktemp("v2_models"))
    args = [
        f"--model_config_file={root / 'models.config'}",
        "--allow_version_labels_for_unavailable_models",
        "--workers=1",
        "--inline_runs=never",  # batches shared by both protocols are counted on the worker
        "--enable_batching",
        f"--batching_parameters_file={root / 'batching.config'}",
        "--enable_per_model_batching_parameters",
        f"--monitoring_config_file={root / 'monitoring.config'}",
        "--rest_api_port=-1",
        "--enable_model_management_api",
        f"--management_base_path_dirs={root}",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path_factory.mktemp("v2_logs")) as process:
        yield V2Gateway(process, root)


def targets(gateway: GatewayProcess) -> tuple[str, str]:
    """The gateway's gRPC and HTTP ``host:port`` for tritonclient."""
    return gateway.target, f"127.0.0.1:{gateway.rest_port}"


Plan = tuple[list[dict[str, Any]], dict[str, np.ndarray]]
"""tritonclient calls and the input arrays they need."""


class Calls:
    """A plan being written: calls in order, and their arrays."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.arrays: dict[str, np.ndarray] = {}

    def infer(
        self,
        call_id: str,
        client: str,
        model: str,
        inputs: dict[str, tuple[str, np.ndarray]],
        **extra: Any,
    ) -> Calls:
        """Add an ``infer`` call (``inputs``: name → (datatype, array))."""
        entry, arrays = triton_client.plan_inputs(call_id, inputs)
        call = {"id": call_id, "client": client, "op": "infer", "model": model, "inputs": entry}
        self.calls.append({**call, **extra})
        self.arrays.update(arrays)
        return self

    def op(self, call_id: str, client: str, op: str, **extra: Any) -> Calls:
        """Add any other call."""
        self.calls.append({"id": call_id, "client": client, "op": op, **extra})
        return self

    def run(
        self, gateway: GatewayProcess, workdir: Path, *, ca: str | None = None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Run the calls with tritonclient in its own process (triton_client_script.py)."""
        grpc_target, http_target = targets(gateway)
        return asyncio.run(
            triton_client.run_calls(
                grpc_target, http_target, self.calls, self.arrays, workdir, ca=ca
            )
        )


def scrape(gateway: GatewayProcess) -> str:
    reply = http("GET", f"http://127.0.0.1:{gateway.rest_port}{METRICS}")
    assert reply.status == 200
    return reply.body.decode()


def sample(page: str, name: str, **labels: str) -> float:
    """The value of the series ``name`` whose labels include ``labels`` (0 when absent)."""
    total = 0.0
    for line in page.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total
