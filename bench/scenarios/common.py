"""Helpers shared by the scenarios: the closed-loop driver, gRPC status checks for h2load runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.load import h2load
from bench.systems.catalog import family
from bench.systems.procs import StartFailed
from bench.systems.targets import Running


def not_available(exc: StartFailed) -> str:
    """Why a scenario's tensorgate configuration is not available: its exit code and last line."""
    tail = exc.log.strip().splitlines()[-1] if exc.log.strip() else str(exc)
    return f"tensorgate refused to start (exit {exc.exit_code}): {tail[:300]}"


def closed_loop_driver() -> str:
    return "h2load" if h2load.available() else "python"


def verify_status(running: Running, client_cpus: tuple[int, ...]) -> dict[str, Any]:
    """Status of 20 requests sent here (h2load cannot see gRPC status) and, when h2load is
    installed, the DATA bytes of one OK answer as h2load counts them (see _check_h2load)."""
    target = running.target
    statuses: dict[str, int] = {}
    if target.transport == "grpc":
        import grpc

        with grpc.insecure_channel(target.address) as channel:
            call = channel.unary_unary(
                target.method, request_serializer=None, response_deserializer=None
            )
            for _ in range(20):
                try:
                    call(target.payload, timeout=30)
                    code = "OK"
                except grpc.RpcError as exc:
                    code = exc.code().name
                statuses[code] = statuses.get(code, 0) + 1
    else:
        import urllib.request

        for _ in range(20):
            request = urllib.request.Request(
                target.url,
                data=target.payload,
                method="POST",
                headers=dict(target.http_headers),
            )
            with urllib.request.urlopen(request, timeout=30) as resp:
                code = "OK" if resp.status == 200 else f"HTTP {resp.status}"
            statuses[code] = statuses.get(code, 0) + 1
    out: dict[str, Any] = {"statuses": statuses}
    if h2load.available():
        r = h2load.run(
            h2load.H2loadRun(
                url=target.url,
                body=target.h2_body,
                connections=1,
                total=20,
                h1=target.transport == "http",
                headers=target.h2load_headers,
                cpus=client_cpus,
            )
        )
        out["ok_body_bytes"] = r.get("bytes_data", 0) / max(1, r["done"])
    return out


def check_h2load(section: dict[str, Any], verify: dict[str, dict[str, Any]]) -> None:
    """Attach the smallest estimated gRPC-OK share of each system's h2load runs: DATA bytes per
    request ÷ those of a verified OK answer (an error answer carries no DATA)."""
    for name, summary in section.items():
        baseline = verify.get(name, {}).get("ok_body_bytes", 0.0)
        fractions = [
            min(1.0, r["data_bytes_per_request"] / baseline)
            for r in summary.get("runs", [])
            if baseline and r.get("driver") == "h2load" and "data_bytes_per_request" in r
        ]
        if fractions:
            summary["ok_fraction_min"] = min(fractions)


def best_of(section: dict[str, Any], fam: str, among: Sequence[str] = ()) -> str | None:
    """The system of family ``fam`` (only those in ``among``, when given) with the highest
    median throughput in ``section``; None if none was measured."""
    names = [
        n for n in section if family(n) == fam and "rps" in section[n] and (not among or n in among)
    ]
    return max(names, key=lambda n: section[n]["rps"]["median"], default=None)
