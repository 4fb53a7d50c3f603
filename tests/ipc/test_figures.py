"""The page of several front ends' figures, summed, is the page one process recording all of
them writes, line for line, TF Serving's format and prometheus_client's (a histogram's sum of
floating-point values may differ in its last digits: addition in another order)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import generate_latest

from gateway.ipc import figures
from gateway.observability.metrics import GatewayCollector, GatewayMetrics, registry_of
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.workers import ShmUse

MODELS = st.sampled_from(["mlp", "resnet"])
Observation = tuple[int, str, str, float]
"""(front end, series, model, value)."""

OBSERVATIONS = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from(["count", "latency", "duration", "batch", "refused", "queuing"]),
        MODELS,
        st.floats(0, 5000, allow_nan=False),
    ),
    max_size=40,
)


def _record(tfs: TfServingMetrics, metrics: GatewayMetrics, obs: Observation) -> None:
    _, series, model, value = obs
    if series == "count":
        tfs.request_count.inc((model, "OK" if value > 10 else "NOT_FOUND"))
    elif series == "latency":
        tfs.request_latency.observe((model, "Predict", "GRPC"), int(value))
    elif series == "duration":
        metrics.request_duration.observe((model, "Predict", "GRPC", "tfserving"), value / 1e4)
    elif series == "batch":
        tfs.input_batch_size.observe((), int(value) % 64)
        metrics.batch_size.observe((model, "1"), int(value) % 64 + 1)
    elif series == "refused":
        metrics.refused.inc((model, "queue_full"))
        placed = (model, "1", "workers")
        metrics.runs_in[placed] = metrics.runs_in.get(placed, 0) + 1
    else:
        tfs.queuing_latency.observe(("pool",), value)
        key = ("GRPC", "tfserving")
        metrics.in_flight[key] = metrics.in_flight.get(key, 0) + 1


def _page(tfs: TfServingMetrics, metrics: GatewayMetrics) -> bytes:
    return tfs.render().encode() + generate_latest(registry_of(GatewayCollector(metrics, list)))


@given(OBSERVATIONS)
def test_the_sum_over_front_ends_is_one_process_recording_everything(
    observations: list[Observation],
) -> None:
    one = (TfServingMetrics(), GatewayMetrics())
    fronts = [(TfServingMetrics(), GatewayMetrics()) for _ in range(3)]
    for obs in observations:
        _record(*one, obs)
        _record(*fronts[obs[0]], obs)
    merged = (TfServingMetrics(), GatewayMetrics())
    shm: ShmUse = {}
    for tfs, metrics in fronts:
        dumped: dict[str, Any] = json.loads(json.dumps(figures.dump(tfs, metrics, {})))
        figures.merge(*merged, dumped, shm)
    merged_lines, one_lines = _page(*merged).splitlines(), _page(*one).splitlines()
    assert len(merged_lines) == len(one_lines)
    for got, want in zip(merged_lines, one_lines, strict=True):
        name, _, value = want.rpartition(b" ")
        if name.split(b"{")[0].endswith(b"_sum"):
            got_name, _, got_value = got.rpartition(b" ")
            assert got_name == name and math.isclose(float(got_value), float(value), rel_tol=1e-9)
        else:
            assert got == want


def test_shared_memory_adds_up_per_worker_and_area() -> None:
    shm: ShmUse = {}
    merged = (TfServingMetrics(), GatewayMetrics())
    for used in (10, 32):
        dumped = figures.dump(None, None, {("0", "input"): (used, 100), ("1", "output"): (1, 50)})
        figures.merge(*merged, json.loads(json.dumps(dumped)), shm)
    assert shm == {("0", "input"): (42, 200), ("1", "output"): (2, 100)}
