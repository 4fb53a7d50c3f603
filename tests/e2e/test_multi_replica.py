"""Several replicas behind client-side load balancing, as the headless Service gives Kubernetes
clients: three gateway processes on loopback ports, one grpc channel with a multi-address target
and round_robin over the replicas grpc.health.v1 calls SERVING (client-side health checking), a
fixed number of concurrent callers. One replica is drained (SIGTERM)
under that load and exits; the callers keep getting answers from the others, and no request fails
except those the draining replica refused with UNAVAILABLE (the drain contract: after SIGTERM new
RPCs get UNAVAILABLE, in-flight ones finish).

Each replica serves the demo model under a different version number, so every answer says which
replica gave it (``model_spec.version``). Everything is driven by counts and events — the drain
starts once every replica has answered, the load ends a fixed number of answers after the drained
process has exited — never by time.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
from gateway.client.convert import predict_request
from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.paths import DEMO_MODEL

REPLICAS = 3
CALLERS = 8
ANSWERS_EACH_BEFORE_DRAIN = 20
"""The drain starts once every replica has given this many answers."""
ANSWERS_AFTER_EXIT = 200
"""The load goes on for this many answers after the drained replica has exited."""
CLIENT_SERVICE_CONFIG = json.dumps(
    {"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": ""}}
)
"""round_robin over the replicas that grpc.health.v1 says are SERVING (client-side health
checking): a draining replica turns NOT_SERVING at once, so clients stop sending it new calls."""
DRAIN_REFUSAL = (
    grpc.StatusCode.UNAVAILABLE,
    "the server is shutting down; retry on another replica",
)
MAX_REQUESTS = 50_000
"""A bound on the whole run: reaching it fails the test (the drained replica never exited)."""


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[list[GatewayProcess]]:
    """Replica i serves ``digits`` version i + 1 (the demo model) with one worker."""
    started: list[GatewayProcess] = []
    try:
        for i in range(REPLICAS):
            base = tmp_path / f"replica{i}" / "digits"
            (base / str(i + 1)).mkdir(parents=True)
            shutil.copy(DEMO_MODEL, base / str(i + 1) / "model.onnx")
            args = [
                "--model_name=digits",
                f"--model_base_path={base}",
                "--workers=1",
                "--file_system_poll_wait_seconds=0",
                "--shutdown_grace_seconds=10",
            ]
            started.append(start_gateway(args, tmp_path))
        yield started
    finally:
        for gateway in started:
            gateway.stop(signal.SIGTERM)


@dataclass
class Tally:
    """What the callers saw: answers by replica version, failures by status code, in order."""

    answers: Counter[int] = field(default_factory=Counter)
    answers_after_drain: Counter[int] = field(default_factory=Counter)
    failures_before_drain: list[tuple[grpc.StatusCode, str]] = field(default_factory=list)
    failures_after_drain: list[tuple[grpc.StatusCode, str]] = field(default_factory=list)
    after_exit: int = 0
    sent: int = 0


async def load_and_drain(targets: list[str], drained: GatewayProcess) -> tuple[Tally, int]:
    """Run the callers; SIGTERM ``drained`` once every replica has answered; stop a fixed number
    of answers after it exited. Returns the tally and the drained process's exit code."""
    tally = Tally()
    all_answered = asyncio.Event()
    draining = False
    exited = asyncio.Event()
    done = asyncio.Event()
    exit_code: list[int] = []
    request = predict_request("digits", {"images": np.zeros((1, 64), np.float32)})
    target = "ipv4:" + ",".join(targets)
    options = [("grpc.service_config", CLIENT_SERVICE_CONFIG)]

    async def wait_exit() -> None:
        exit_code.append(await asyncio.to_thread(drained.process.wait, 120))
        exited.set()

    async with grpc.aio.insecure_channel(target, options=options) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        async def caller() -> None:
            while not done.is_set() and tally.sent < MAX_REQUESTS:
                tally.sent += 1
                after_drain = draining
                try:
                    response: predict_pb2.PredictResponse = await stub.Predict(request, timeout=60)
                except grpc.aio.AioRpcError as error:
                    failures = (
                        tally.failures_after_drain if after_drain else tally.failures_before_drain
                    )
                    failures.append((error.code(), error.details() or ""))
                    continue
                version = response.model_spec.version.value
                tally.answers[version] += 1
                if after_drain:
                    tally.answers_after_drain[version] += 1
                if len(tally.answers) == REPLICAS and all(
                    n >= ANSWERS_EACH_BEFORE_DRAIN for n in tally.answers.values()
                ):
                    all_answered.set()
                if exited.is_set():
                    tally.after_exit += 1
                    if tally.after_exit >= ANSWERS_AFTER_EXIT:
                        done.set()

        callers = [asyncio.create_task(caller()) for _ in range(CALLERS)]
        waiter = asyncio.create_task(all_answered.wait())
        finished: asyncio.Future[Any] = asyncio.gather(*callers)
        either: list[asyncio.Future[Any]] = [waiter, finished]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        assert all_answered.is_set(), f"not every replica answered: {tally.answers}"
        drained.process.send_signal(signal.SIGTERM)
        draining = True
        watcher = asyncio.create_task(wait_exit())
        await finished
        await watcher
    return tally, exit_code[0]


async def test_draining_one_replica_under_load_fails_nothing_but_refusals(
    replicas: list[GatewayProcess],
) -> None:
    drained, *others = replicas
    tally, code = await load_and_drain([g.target for g in replicas], drained)

    assert code == 0, drained.log()
    assert tally.sent < MAX_REQUESTS, f"the drained replica did not exit: {tally}"
    # Every failure is the drain's refusal (a call the client sent just before the signal may
    # arrive after it and be refused too); nothing is CANCELLED, reset or timed out.
    failures = tally.failures_before_drain + tally.failures_after_drain
    assert set(failures) <= {DRAIN_REFUSAL}, f"{tally}\n{drained.log()}"
    # The others kept answering through the drain and after the exit, both of them.
    assert tally.after_exit >= ANSWERS_AFTER_EXIT
    survivors = {version for version in tally.answers_after_drain if version != 1}
    assert survivors == {2, 3}, tally.answers_after_drain
    for gateway in others:
        assert gateway.process.poll() is None
