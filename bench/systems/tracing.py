"""tensorgate traced: the OTLP/HTTP sink its spans go to and the ``OTEL_*`` variables that send
them there, shared by the ``tracing`` scenario and ``python -m bench profile --tracing``.

The sink (:mod:`bench.systems.peers.otlp_sink`) runs on the client's CPUs, so exporting costs the
server only its own side; it counts the spans it receives (:func:`sink_spans`).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from bench.systems.procs import Server, start_with_ready_fd

TRACING_SAMPLERS = {"ratio 0": "0", "ratio 0.01": "0.01", "ratio 1.0": "1.0"}
"""``OTEL_TRACES_SAMPLER_ARG`` of each traced system (``parentbased_traceidratio``); the load
carries no traceparent, so ratio 0 samples nothing, 0.01 one request in a hundred (what
production runs) and 1.0 every request."""

TRACING_CONTROL = "off (control)"
"""A second untraced system in the tracing scenario's side-by-side rounds: its cost against
``off`` is the measurement's own spread, against which the samplers' figures can be read."""


def tracing_env(endpoint: str, ratio: str) -> dict[str, str]:
    """The ``OTEL_*`` variables that make tensorgate trace at sample ``ratio`` (text, e.g. ``0``,
    ``1.0``; ``parentbased_traceidratio``) and export over OTLP/HTTP to ``endpoint``."""
    return {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": ratio,
        "OTEL_SERVICE_NAME": "tensorgate-bench",
    }


def start_sink(logs: Path, cpus: Sequence[int] = ()) -> tuple[Server, str]:
    """Start the OTLP/HTTP sink pinned to ``cpus``, logging to ``logs/otlp-sink.log``; returns it
    and its endpoint URL (``http://127.0.0.1:<port>``)."""
    argv = [sys.executable, "-m", "bench.systems.peers.otlp_sink"]
    sink, info = start_with_ready_fd("otlp-sink", argv, logs / "otlp-sink.log", cpus=cpus)
    return sink, f"http://127.0.0.1:{info['port']}"


def sink_spans(endpoint: str) -> int:
    """Spans the sink at ``endpoint`` has received so far."""
    with urllib.request.urlopen(f"{endpoint}/stats", timeout=10) as response:
        return int(json.loads(response.read())["spans"])
