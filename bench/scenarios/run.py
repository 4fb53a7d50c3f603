"""Run one scenario of a run by name (:data:`bench.scenarios.plan.SCENARIOS`)."""

from __future__ import annotations

import logging
import time

from bench.scenarios.drain import drain
from bench.scenarios.features import batching, calls, idle_rss, profile
from bench.scenarios.load import overload, ramp
from bench.scenarios.reliability import chaos, soak
from bench.scenarios.runner import Bench
from bench.scenarios.seeds import seeds
from bench.scenarios.throughput import limits, openvino_accuracy, resnet50, tiny, tiny_2core
from bench.scenarios.tracing import tracing

log = logging.getLogger(__name__)

SCENARIO_FUNCTIONS = {
    "limits": limits,
    "tiny": tiny,
    "tiny-2core": tiny_2core,
    "resnet50": resnet50,
    "openvino-accuracy": openvino_accuracy,
    "overload": overload,
    "ramp": ramp,
    "batching": batching,
    "tracing": tracing,
    "idle-rss": idle_rss,
    "profile": profile,
    "calls": calls,
    "soak": soak,
    "chaos": chaos,
    "seeds": seeds,
    "drain": drain,
}


def run_scenario(bench: Bench, name: str) -> None:
    """Run one scenario; a crash is recorded in the results instead of ending the run."""
    began = time.monotonic()
    try:
        SCENARIO_FUNCTIONS[name](bench)
    except Exception as exc:
        log.exception("scenario %s failed", name)
        bench.results["scenarios"][name] = {"error": f"{type(exc).__name__}: {exc}"}
    bench.results["scenarios"].setdefault(name, {})["elapsed_s"] = time.monotonic() - began
    log.info("scenario %s done in %.0f s", name, time.monotonic() - began)
