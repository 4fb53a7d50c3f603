"""``python -m bench profile``: where a server's CPU goes under saturating load (py-spy).

Starts the system (MLP, one pinned server core), drives it with h2load (or the Python generator) at
the saturation concurrency from the other core, and samples every process of the server with py-spy
(``bench/.venvs/tools``, non-blocking, Python frames; ``--native`` adds C frames and pauses the
process to sample) or, with ``--perf``, with Linux perf (native, without pausing: see
:mod:`bench.measure.perf_native`) for the same seconds. Writes
``profile-<system>-<model>[-kind].md`` with, per process, the functions where samples land (self)
and the functions on the stack (inclusive), as shares of that process's non-idle samples (perf:
self time by shared object and by function). ``--tracing RATIO`` runs tensorgate with the
tracing scenario's ``OTEL_*`` variables at that sample ratio, exporting to an OTLP/HTTP sink on
the client's core.
"""

from __future__ import annotations

import collections
import logging
import subprocess
import threading
from pathlib import Path
from typing import Any

from bench.cpus import layouts, pinned
from bench.measure import perf_native
from bench.measure.points import Load, run_point
from bench.measure.usage import descendants, thread_cpu
from bench.systems import venvs
from bench.systems.catalog import CATALOG
from bench.systems.models import ensure_models
from bench.systems.procs import Server, StartFailed
from bench.systems.start import start
from bench.systems.targets import Context, SystemSpec
from bench.systems.tracing import start_sink, tracing_env

log = logging.getLogger(__name__)
TOP = 25


def summarize_stacks(raw: str) -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]]:
    """py-spy ``--format raw`` (collapsed stacks) → total, top self frames, top inclusive."""
    self_counts: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        self_counts[frames[-1]] += count
        for frame in set(frames[1:]):  # the first frame is the thread
            incl[frame] += count
    return total, self_counts.most_common(TOP), incl.most_common(TOP)


def profile(
    system: str,
    model: str,
    seconds: float,
    out: Path,
    cache: Path,
    native: bool = False,
    perf: bool = False,
    tracing: str | None = None,
) -> tuple[Path, list[dict[str, Any]]]:
    """Profile ``system`` serving ``model``; write ``out/profile-….md`` (models and logs under
    ``cache``).

    ``perf``: sample with Linux perf (:mod:`bench.measure.perf_native`, shared objects and native
    functions) instead of py-spy. ``tracing``: a sample ratio (``0``, ``1.0``) to trace at, spans
    exported to an OTLP/HTTP sink. Returns the file and the CPU-per-request table (one row per
    thread that used CPU).
    """
    if perf:
        reason = perf_native.available()
        if reason is not None:
            raise RuntimeError(reason)
        spy = Path()
    else:
        python, reason = venvs.ensure("tools")
        if python is None:
            raise RuntimeError(reason)
        spy = python.parent / "py-spy"
    server_cpus, client_cpus = layouts()["1-core"]
    ctx = Context(cache / "models", cache / "logs" / "profile")
    ensure_models(ctx.models_root, (model,))
    spec, sink = CATALOG[system], None
    if tracing is not None:
        sink, endpoint = start_sink(ctx.logs, client_cpus)
        env = tracing_env(endpoint, tracing)
        spec = SystemSpec(f"{system} tracing {tracing}", spec.kind, {**spec.params, "env": env})
    try:
        running = start(ctx, spec, model, server_cpus)
    except StartFailed as exc:
        _stop(sink)
        raise RuntimeError(f"{system} did not start: {exc}\n{exc.log}") from None
    out.mkdir(parents=True, exist_ok=True)
    raw_files: dict[int, Path] = {}
    result: dict[str, Any] = {}
    try:
        pids = descendants(running.server.pid)
        cpu_before = thread_cpu(pids)
        load = Load(64, seconds + 2.0, 1.0, driver="h2load")
        driver = threading.Thread(
            target=lambda: result.update(run_point(running, load, client_cpus))
        )
        driver.start()
        samplers = []
        for pid in pids:
            raw_files[pid] = ctx.logs / f"py-spy-{system}-{pid}.txt"
            argv = [str(spy), "record", "--nonblocking", "-r", "200", "-d", f"{seconds:g}",
                    "-f", "raw", "-o", str(raw_files[pid]), "-p", str(pid)]  # fmt: skip
            if native:  # py-spy cannot unwind C stacks without pausing the process
                argv[2:3] = ["--native"]
            if perf:
                raw_files[pid] = ctx.logs / f"perf-{system}-{pid}.data"
                argv = perf_native.record(pid, seconds, raw_files[pid])
            samplers.append(
                subprocess.Popen(
                    pinned(argv, client_cpus), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )
        for sampler in samplers:
            sampler.wait(seconds + 60)
        driver.join()
        cpu_after = thread_cpu(pids)
    finally:
        running.stop()
        _stop(sink)
    method = (
        f"perf record, {perf_native.HZ} Hz, self time by shared object and function"
        if perf
        else f"py-spy 0.4.3, 200 Hz, {'native and Python' if native else 'Python'} frames, "
        "idle samples excluded"
    )
    lines = [
        f"# Profile: {system} serving {model} under saturating load",
        "",
        f"h2load, concurrency 64, server pinned to CPUs {list(server_cpus)}: "
        f"{result.get('rps', 0):.0f} req/s, server CPU {result.get('server_cpu_cores', 0):.2f}"
        f" cores. {method}.",
        "",
    ]
    requests = result.get("rps", 0.0) * (load.duration_s + load.warmup_s)
    lines += [
        "## CPU per request, by process and thread (from /proc, whole load run)",
        "",
        "| process | thread | CPU µs / request |",
        "|---|---|---|",
    ]
    table: list[dict[str, Any]] = []
    for key, after in sorted(cpu_after.items()):
        used = after - cpu_before.get(key, 0.0)
        if requests and used > 0.001:
            role = "server process" if key[0] == running.server.pid else f"child {key[0]}"
            table.append({"process": role, "thread": f"{key[2]} ({key[1]})",
                          "cpu_us_per_request": used / requests * 1e6})  # fmt: skip
            lines.append(f"| {role} | {key[2]} ({key[1]}) | {used / requests * 1e6:.0f} |")
    lines.append("")
    for pid, path in raw_files.items():
        if not path.exists():
            continue
        role = "server process" if pid == running.server.pid else "child"
        if perf:
            lines += perf_native.summary(path, f"pid {pid}: {role}")
            path.unlink()
            continue
        total, top_self, top_incl = summarize_stacks(path.read_text())
        lines += [
            f"## pid {pid}: {role}, {total} samples",
            "",
            "| self % | function |",
            "|---|---|",
        ]
        lines += [f"| {100 * n / total:.1f} | `{frame}` |" for frame, n in top_self]
        lines += ["", "| inclusive % | function |", "|---|---|"]
        lines += [f"| {100 * n / total:.1f} | `{frame}` |" for frame, n in top_incl]
        lines.append("")
    kind = "-perf" if perf else "-native" if native else ""
    if tracing is not None:
        kind += f"-tracing-{tracing}"
    path = out / f"profile-{system}-{model}{kind}.md"
    path.write_text("\n".join(lines))
    return path, table


def _stop(sink: Server | None) -> None:
    if sink is not None:
        sink.stop()
