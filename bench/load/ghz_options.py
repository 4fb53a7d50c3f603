"""``python -m bench load``'s command line: ghz's options (and a few of ours) → LoadOptions.

ghz's names and defaults: ``--call``, ``-c``, ``-n`` (200 when no ``-z`` is given), ``-z``, ``-r``,
``--connections``, ``-t``, ``-d``/``-D``/``-B``, ``-m``, ``-O summary|json|pretty``, ``-o``,
``--insecure`` (accepted, ignored), ``--concurrency-schedule=step`` with ``--concurrency-start``,
``-step``, ``-step-duration`` and ``-end``; ours: ``--model``, ``--rest``, ``--content-type``,
``--processes``, ``--warmup`` and ``--cpus``. Durations are Go's (``10s``, ``500ms``, ``1m30s``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.load.calls import method_path, parse_duration
from bench.load.ghz_report import summary_text
from bench.load.loadgen import LoadOptions, StepSchedule


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``load`` command's options (ghz's names and defaults) to ``p``."""
    p.add_argument("host", help="gRPC host:port, or http://host:port with --rest")
    p.add_argument(
        "--call",
        default="tensorflow.serving.PredictionService.Predict",
        help="package.Service.Method (gRPC) or URL path (--rest)",
    )
    p.add_argument("-c", "--concurrency", type=int, default=50)
    p.add_argument(
        "-n",
        "--total",
        type=int,
        default=0,
        help="requests to send (default 200 when no duration is given)",
    )
    p.add_argument("-z", "--duration", default="", help="run time, e.g. 10s (overrides -n)")
    p.add_argument("-r", "--rps", type=float, default=0.0, help="open loop: constant rate")
    p.add_argument("--connections", type=int, default=1)
    p.add_argument("-t", "--timeout", default="20s")
    p.add_argument("-d", "--data", default="", help="request as JSON (gRPC) or body text (REST)")
    p.add_argument("-D", "--data-file", type=Path, help="file holding the -d data")
    p.add_argument("-B", "--binary-file", type=Path, help="serialized request message / body")
    p.add_argument(
        "--model",
        default="",
        help="send the bench model's sample PredictRequest (mlp, resnet50) instead of -d/-B",
    )
    p.add_argument("-m", "--metadata", default="", help="JSON object of request metadata")
    p.add_argument("-O", "--format", choices=("summary", "json", "pretty"), default="summary")
    p.add_argument("-o", "--output", type=Path, help="write the report here instead of stdout")
    p.add_argument("--insecure", action="store_true", help="accepted for ghz compatibility")
    p.add_argument("--rest", action="store_true", help="HTTP transport (POST to --call)")
    p.add_argument("--content-type", default="application/json", help="REST body type")
    p.add_argument("--processes", type=int, default=1, help="client processes")
    p.add_argument("--warmup", default="0s", help="not counted at the start of a -z run")
    p.add_argument("--cpus", default="", help="pin client processes, e.g. 0 or 0,1")
    p.add_argument("--concurrency-schedule", choices=("const", "step"), default="const")
    p.add_argument("--concurrency-start", type=int, default=1)
    p.add_argument("--concurrency-step", type=int, default=1)
    p.add_argument("--concurrency-step-duration", default="1s")
    p.add_argument("--concurrency-end", type=int, default=0)


def load_options(args: argparse.Namespace, payload: Callable[[], bytes]) -> LoadOptions:
    """The run ``args`` (parsed by :func:`add_arguments`' options) asks for; ``payload()`` builds
    the request. Raises ValueError for a bad duration or call name."""
    duration = parse_duration(args.duration) if args.duration else 0.0
    schedule = None
    if args.concurrency_schedule == "step":
        schedule = StepSchedule(
            args.concurrency_start,
            args.concurrency_step,
            parse_duration(args.concurrency_step_duration),
            args.concurrency_end,
        )
    metadata = tuple(json.loads(args.metadata).items()) if args.metadata else ()
    return LoadOptions(
        target=args.host,
        method=args.call if args.rest else method_path(args.call),
        payload=payload(),
        transport="http" if args.rest else "grpc",
        concurrency=args.concurrency,
        total=0 if duration else (args.total or 200),
        duration_s=duration,
        rps=args.rps,
        connections=args.connections,
        timeout_s=parse_duration(args.timeout),
        processes=args.processes,
        warmup_s=parse_duration(args.warmup),
        schedule=schedule,
        metadata=metadata,
        content_type=args.content_type,
        cpus=tuple(int(c) for c in args.cpus.split(",") if c),
        extra={"name": args.call},
    )


def report_text(report: dict[str, Any], output_format: str) -> str:
    """The report as ``-O`` asks: ghz's summary text, or JSON (``pretty``: indented)."""
    if output_format == "summary":
        return summary_text(report)
    return json.dumps(report, indent=2 if output_format == "pretty" else None) + "\n"
