"""``python -m bench``: run the comparison, rebuild a report, drive load by hand, build models.

    python -m bench run --quick            # < 2 minutes: a preview of every scenario
    python -m bench run                    # the full comparison (< 30 minutes on 2 cores)
    python -m bench run --only tiny,ramp   # some scenarios (bench.scenarios.plan.SCENARIOS)
    python -m bench run --only drain       # lost calls over 20 + 20 SIGTERM-under-load runs
    python -m bench report bench/results/2026-01-01-full
    python -m bench load --call tensorflow.serving.PredictionService.Predict --model mlp \\
        -c 16 -z 10s --format summary 127.0.0.1:8500
    python -m bench models                 # build bench/.cache/models/{mlp,resnet50}
    python -m bench venvs triton kserve    # create peers' virtualenvs (default: all)
    python -m bench profile --system tensorgate --out bench/results/2026-01-01-full
    python -m bench fuzz --minutes 10    # hostile input against a real gateway, by status
    python -m bench grpcio --versions 1.75.1,1.78.2,1.83.2,1.85.1 --rounds 6 --seconds 8
    python -m bench otlp                 # tensorgate's OTLP encoder against OpenTelemetry's
    python -m bench model-download       # ResNet50 from a local S3 server: boto3, obstore, restart
    python -m bench codecs               # JPEG decoders and JSON body readers, CPU per call
    python -m bench seed-images DIR      # the seeds' test's JPEGs, for a Locust run by hand
    python -m bench probes               # hostile callers against real gateways, goal rows

Results go to ``bench/results/<date>-<plan>/`` (results.json, README.md, PNGs); logs and models
to ``bench/.cache/``; the peers' virtualenvs to ``bench/.venvs/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.logging import RichHandler

from bench.load.calls import predict_payload, request_from_json
from bench.load.ghz_options import add_arguments, load_options, report_text
from bench.scenarios.grpcio import DEFAULT_VERSIONS, GrpcPlan
from bench.scenarios.grpcio import SYSTEMS as GRPCIO_SYSTEMS
from bench.scenarios.plan import FULL, QUICK, SCENARIOS, Plan
from bench.systems.catalog import CALL_SYSTEMS

if TYPE_CHECKING:
    from bench.scenarios.otlp import OtlpPlan

RESULTS = Path(__file__).resolve().parent / "results"
log = logging.getLogger("bench")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the comparison and write the report")
    run.add_argument("--quick", action="store_true", help="the < 2 minute plan")
    run.add_argument(
        "--only", default="", help=f"comma-separated subset of: {', '.join(SCENARIOS)}"
    )
    run.add_argument(
        "--out", type=Path, help="result directory (default bench/results/<date>-<plan>)"
    )
    run.add_argument(
        "--tracing-rounds",
        type=_positive,
        metavar="N",
        help="side-by-side rounds of the tracing scenario (default: the plan's, 30 in the full "
        "plan); the 95 %% interval of its median narrows about as 1/sqrt(N)",
    )
    run.add_argument(
        "--drain-runs",
        type=_positive,
        metavar="N",
        help="SIGTERM-under-load runs of the drain scenario, for each case (default 20)",
    )
    rep = sub.add_parser("report", help="rebuild README.md and plots from results.json")
    rep.add_argument("directory", type=Path)
    sub.add_parser("models", help="build the benchmark models")
    env = sub.add_parser("venvs", help="create the peers' virtualenvs (bench/.venvs) if missing")
    env.add_argument("names", nargs="*", help="default: all of them")
    prof = sub.add_parser("profile", help="py-spy profile of a system under saturating load")
    prof.add_argument("--system", default="tensorgate", help="a name from bench.systems.catalog")
    prof.add_argument("--model", default="mlp", choices=("mlp", "resnet50"))
    prof.add_argument("--seconds", type=float, default=8.0)
    prof.add_argument("--native", action="store_true", help="sample C frames too")
    prof.add_argument(
        "--perf", action="store_true", help="sample with Linux perf (native, no pauses)"
    )
    prof.add_argument(
        "--tracing", metavar="RATIO", help="trace at this sample ratio, spans to an OTLP sink"
    )
    prof.add_argument("--out", type=Path, default=RESULTS / "profiles")
    add_arguments(sub.add_parser("load", help="ghz-style load generator"))
    gr = sub.add_parser(
        "grpcio",
        help="tensorgate and the echo server on several grpcio releases (one venv each)",
        description="Build (once) a venv per grpcio release under bench/.venvs/grpcio-<v>/, "
        "regenerate the protos with its grpcio-tools, then measure echo, tensorgate and "
        "tensorgate-batch (tiny MLP, one pinned server core, h2load) in interleaved rounds; "
        "report in bench/results/<date>-grpcio/.",
    )
    gr.add_argument(
        "--versions",
        default=",".join(DEFAULT_VERSIONS),
        help="comma-separated grpcio releases (default %(default)s)",
    )
    gr.add_argument("--rounds", type=_positive, default=6, help="rounds (default %(default)s)")
    gr.add_argument(
        "--seconds", type=float, default=8.0, help="measured seconds per point (default 8)"
    )
    gr.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds per point")
    gr.add_argument("--concurrency", type=_positive, default=64, help="requests in flight")
    gr.add_argument(
        "--systems",
        default=",".join(GRPCIO_SYSTEMS),
        help="comma-separated subset of %(default)s",
    )
    gr.add_argument(
        "--out", type=Path, help="result directory (default bench/results/<date>-grpcio)"
    )
    ot = sub.add_parser(
        "otlp",
        help="CPU per span of tensorgate's OTLP encoder and OpenTelemetry's, on the same spans",
        description="Encode and export the spans of traced Predicts with OpenTelemetry's OTLP "
        "encoder and with tensorgate's, in rounds; report in bench/results/<date>-otlp/.",
    )
    ot.add_argument(
        "--requests",
        default="1,11,85",
        help="export batch sizes in traced Predicts, 6 spans each (default %(default)s)",
    )
    ot.add_argument("--rounds", type=_positive, default=7, help="rounds (default %(default)s)")
    ot.add_argument("--point-cpu", type=float, default=0.3, help="CPU seconds per point, at least")
    ot.add_argument("--no-export", action="store_true", help="encode only, no sink")
    ot.add_argument("--out", type=Path, help="result directory (default bench/results/<date>-otlp)")
    md = sub.add_parser(
        "model-download",
        help="the ResNet50 download from a local S3 server (boto3 against obstore) and a "
        "gateway's start with a cold and a warm model cache; report in "
        "bench/results/<date>-model-download/.",
    )
    md.add_argument("--rounds", type=_positive, default=5, help="rounds (default 5)")
    md.add_argument(
        "--out", type=Path, help="result directory (default bench/results/<date>-model-download)"
    )
    co = sub.add_parser(
        "codecs",
        help="CPU per call of the JPEG decoders and the JSON body readers",
        description="Pillow, simplejpeg and PyTurboJPEG decoding (and resizing) the seeds' JPEGs, "
        "and the seeds' float-row JSON body read into its tensor before and now; report in "
        "bench/results/<date>-codecs/.",
    )
    co.add_argument("--rounds", type=_positive, default=7, help="rounds (default %(default)s)")
    co.add_argument("--round-cpu", type=float, default=0.2, help="CPU seconds per round, at least")
    co.add_argument(
        "--out", type=Path, help="result directory (default bench/results/<date>-codecs)"
    )
    pr = sub.add_parser(
        "probes",
        help="hostile callers against real gateways: stalls, kills, memory, metrics, slots",
        description="Re-measure how callers could stall, kill or bloat a front end, each probe "
        "against gateways started for it (127.0.0.1), with its baseline where there is one; "
        "report in bench/results/<date>-probes/ (about 12 minutes on 2 CPUs).",
    )
    pr.add_argument("--only", default="", help="comma-separated subset of the probes")
    pr.add_argument(
        "--out", type=Path, help="result directory (default bench/results/<date>-probes)"
    )
    si = sub.add_parser("seed-images", help="write the seeds' test's JPEGs into a folder")
    si.add_argument("folder", type=Path)
    ca = sub.add_parser("calls", help="Python calls per request of each system (exact counts)")
    ca.add_argument("--systems", default=",".join(CALL_SYSTEMS), help="default %(default)s")
    ca.add_argument("--requests", type=_positive, default=2000, help="counted calls per system")
    ca.add_argument("--concurrency", type=_positive, default=16)
    ca.add_argument("--json", type=Path, help="also write the counts here as JSON")
    fz = sub.add_parser("fuzz", help="randomized hostile input against a real gateway")
    fz.add_argument("--minutes", type=float, default=1.0)
    fz.add_argument("--threads", type=int, default=3, help="client threads per surface")
    fz.add_argument("--seed", type=int, default=0)
    fz.add_argument("--json", type=Path, help="also write the report here as JSON")
    return parser


def _payload(args: argparse.Namespace) -> bytes:
    if args.binary_file:
        return bytes(args.binary_file.read_bytes())
    if args.model:
        from bench.systems.models import INPUT_NAMES, sample_input

        return predict_payload(args.model, {INPUT_NAMES[args.model]: sample_input(args.model)})
    text = args.data_file.read_text() if args.data_file else args.data
    if not text:
        raise ValueError("give the request: -d, -D, -B or --model")
    return text.encode() if args.rest else request_from_json(args.call, text)


def calls_command(args: argparse.Namespace) -> int:
    from bench.measure.pycalls import count, table
    from bench.systems.catalog import CATALOG
    from bench.systems.models import ensure_models
    from bench.systems.targets import Context

    root = Path(__file__).resolve().parent / ".cache"
    ensure_models(root / "models", ("mlp",))
    ctx = Context(root / "models", root / "logs")
    found = {}
    for name in args.systems.split(","):
        found[name] = count(
            ctx, CATALOG[name], "mlp", requests=args.requests, concurrency=args.concurrency
        )
        log.info("%s: %s", name, {role: c["ours"] for role, c in found[name].items()})
    print(table(found))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))
    return 0


def load_command(args: argparse.Namespace) -> int:
    from bench.load.loadgen import run_load

    report = run_load(load_options(args, lambda: _payload(args)))
    text = report_text(report, args.format)
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def run_plan(args: argparse.Namespace) -> Plan:
    """The plan ``run`` follows: quick or full, with ``--tracing-rounds`` and ``--drain-runs``
    applied."""
    plan = QUICK if args.quick else FULL
    if args.tracing_rounds:
        plan = dataclasses.replace(plan, tracing_side_rounds=args.tracing_rounds)
    if args.drain_runs:
        plan = dataclasses.replace(plan, drain_runs=args.drain_runs)
    return plan


def run_command(args: argparse.Namespace, console: Console) -> int:
    from bench.measure.progress import RunProgress
    from bench.report.write import write
    from bench.scenarios.estimates import estimates_s
    from bench.scenarios.run import run_scenario
    from bench.scenarios.runner import Bench

    plan = run_plan(args)
    names = [n for n in args.only.split(",") if n] or list(plan.scenarios)
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        raise ValueError(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    run_id = f"{datetime.date.today().isoformat()}-{plan.name}"
    if args.only:
        run_id += "-" + "-".join(names)
    out = args.out or RESULTS / run_id
    bench = Bench(plan, run_id, out)
    with RunProgress(estimates_s(plan, names), console) as progress:
        for name in names:
            with progress.scenario(name):
                run_scenario(bench, name)
            bench.results["run"]["elapsed_s"] = bench.elapsed_s()
            write(bench.results, out)  # a partial report survives an interrupted run
    log.info("report: %s (%.0f s)", out / "README.md", bench.elapsed_s())
    return 0


def grpcio_plan(args: argparse.Namespace) -> GrpcPlan:
    """The plan of ``python -m bench grpcio`` (ValueError for a bad version or system)."""
    from bench.systems.grpcio_venvs import parse_versions

    return GrpcPlan(
        versions=tuple(parse_versions(args.versions)),
        systems=tuple(s for s in args.systems.split(",") if s),
        rounds=args.rounds,
        seconds=args.seconds,
        warmup_s=args.warmup,
        concurrency=args.concurrency,
    )


def grpcio_command(args: argparse.Namespace, console: Console) -> int:
    from bench.measure.progress import RunProgress
    from bench.scenarios.grpcio import run

    plan = grpcio_plan(args)
    out = args.out or RESULTS / f"{datetime.date.today().isoformat()}-grpcio"
    with (
        RunProgress({"grpcio": plan.estimate_s()}, console) as progress,
        progress.scenario("grpcio"),
    ):
        run(plan, out)
    log.info("report: %s", out / "README.md")
    return 0


def otlp_plan(args: argparse.Namespace) -> OtlpPlan:
    """The plan of ``python -m bench otlp`` (ValueError for a bad batch size)."""
    from bench.scenarios.otlp import OtlpPlan

    return OtlpPlan(
        requests=tuple(int(n) for n in args.requests.split(",") if n),
        rounds=args.rounds,
        point_cpu_s=args.point_cpu,
        export=not args.no_export,
    )


def model_download_command(args: argparse.Namespace, console: Console) -> int:
    """``python -m bench model-download``: measure, write the report, print its table."""
    from bench.scenarios.model_download import DownloadPlan, report, run

    out = args.out or RESULTS / f"{datetime.date.today().isoformat()}-model-download"
    results = run(DownloadPlan(rounds=args.rounds), out)
    console.print(report(results))
    console.print(f"written to {out}")
    return 0


def otlp_command(args: argparse.Namespace, console: Console) -> int:
    from bench.measure.progress import RunProgress
    from bench.scenarios.otlp import run

    plan = otlp_plan(args)
    out = args.out or RESULTS / f"{datetime.date.today().isoformat()}-otlp"
    with RunProgress({"otlp": plan.estimate_s()}, console) as progress, progress.scenario("otlp"):
        run(plan, out)
    log.info("report: %s", out / "README.md")
    return 0


def codecs_command(args: argparse.Namespace, console: Console) -> int:
    from bench.measure.progress import RunProgress
    from bench.scenarios.codecs import CodecsPlan, run

    plan = CodecsPlan(rounds=args.rounds, round_cpu_s=args.round_cpu)
    out = args.out or RESULTS / f"{datetime.date.today().isoformat()}-codecs"
    with (
        RunProgress({"codecs": plan.estimate_s()}, console) as progress,
        progress.scenario("codecs"),
    ):
        run(plan, out)
    log.info("report: %s", out / "README.md")
    return 0


def probes_command(args: argparse.Namespace, console: Console) -> int:
    """``python -m bench probes``: run them, write the report, print its goal rows."""
    from bench.scenarios.probes import run, summary_text
    from bench.scenarios.probes_plan import ProbesPlan

    out = args.out or RESULTS / f"{datetime.date.today().isoformat()}-probes"
    results = run(ProbesPlan(), out, [n for n in args.only.split(",") if n])
    sys.stdout.write(summary_text(results))
    log.info("report: %s", out / "README.md")
    return 0


def seed_images_command(folder: Path) -> int:
    from bench.load import seed_images

    for size in seed_images.SIZES:
        for path in seed_images.write(folder, size):
            sys.stdout.write(f"{path}\n")
    return 0


def rebuild_report(directory: Path) -> None:
    """Re-render a report directory: a ``python -m bench grpcio``, ``otlp``, ``codecs`` or
    ``probes`` one, or a ``run`` one."""
    results = json.loads((directory / "results.json").read_text())
    if results.get("kind") == "probes":
        from bench.report import probes_report

        probes_report.rebuild(directory)
        return
    if results.get("kind") == "codecs":
        from bench.report import codecs_report

        codecs_report.rebuild(directory)
        return
    if results.get("kind") == "grpcio":
        from bench.report import grpcio_report

        grpcio_report.rebuild(directory)
        return
    if results.get("kind") == "otlp":
        from bench.report import otlp_report

        otlp_report.REPORT.rebuild(directory)
        return
    from bench.report.write import rebuild

    rebuild(directory)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def venvs_command(names: Sequence[str]) -> int:
    """Create the named peer venvs (all when none is named); 1 if any cannot be built."""
    from bench.systems.venvs import RECIPES, ensure

    unknown = sorted(set(names) - set(RECIPES))
    if unknown:
        raise ValueError(f"unknown venv(s) {', '.join(unknown)}; known: {', '.join(RECIPES)}")
    failed = 0
    for name in names or list(RECIPES):
        python, reason = ensure(name)
        sys.stdout.write(f"{name}: {python or 'not available: ' + reason}\n")
        failed += python is None
    return 1 if failed else 0


def _configure_logging(console: Console, level: int) -> None:
    """On a terminal, log lines scroll above the run's status line (rich); else plain lines."""
    if console.is_terminal:
        handler: logging.Handler = RichHandler(
            console=console, show_path=False, log_time_format="%H:%M:%S"
        )
        handler.setFormatter(logging.Formatter("%(name)s] %(message)s"))
    else:
        handler = logging.StreamHandler()
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname).1s %(name)s] %(message)s", "%H:%M:%S")
        )
    logging.basicConfig(level=level, handlers=[handler])


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    # SIGTERM (and SIGINT, even in a background job that inherited it ignored) unwinds the run,
    # so every server it started is stopped by the ``finally`` blocks on the way out.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    args = _parser().parse_args(argv)
    console = Console(stderr=True)
    _configure_logging(console, logging.DEBUG if args.verbose else logging.INFO)
    began = time.monotonic()
    try:
        if args.command == "run":
            return run_command(args, console)
        if args.command == "report":
            rebuild_report(args.directory)
            return 0
        if args.command == "grpcio":
            return grpcio_command(args, console)
        if args.command == "otlp":
            return otlp_command(args, console)
        if args.command == "model-download":
            return model_download_command(args, console)
        if args.command == "codecs":
            return codecs_command(args, console)
        if args.command == "seed-images":
            return seed_images_command(args.folder)
        if args.command == "probes":
            return probes_command(args, console)
        if args.command == "models":
            from bench.scenarios.runner import CACHE
            from bench.systems.models import ensure_models

            for name, path in ensure_models(CACHE / "models").items():
                sys.stdout.write(f"{name}: {path}\n")
            return 0
        if args.command == "venvs":
            return venvs_command(args.names)
        if args.command == "calls":
            return calls_command(args)
        if args.command == "fuzz":
            from bench.scenarios.fuzz import fuzz, summary_text
            from bench.scenarios.runner import CACHE

            report = fuzz(args.minutes, CACHE, threads=args.threads, seed=args.seed)
            sys.stdout.write(summary_text(report))
            if args.json:
                args.json.write_text(json.dumps(report, indent=1) + "\n")
            return 0 if report["ok"] else 1
        if args.command == "profile":
            from bench.measure.profile import profile
            from bench.scenarios.runner import CACHE

            path, _ = profile(
                args.system,
                args.model,
                args.seconds,
                args.out,
                CACHE,
                args.native,
                args.perf,
                args.tracing,
            )
            sys.stdout.write(f"{path}\n")
            return 0
        return load_command(args)
    except (ValueError, RuntimeError) as exc:
        sys.stderr.write(f"bench: {exc}\n")
        return 2
    finally:
        log.debug("%s took %.1f s", args.command, time.monotonic() - began)
