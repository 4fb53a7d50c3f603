"""Several front-end processes sharing one worker pool, and the drain, from one run.

- tiny MLP, 2 cores, c=64 spread over :data:`~bench.systems.catalog.TWO_CORE_CONNECTIONS`
  connections: tensorgate with its default front ends (the better of batching off and on,
  :data:`~bench.systems.catalog.GRPC_TENSORGATE` ``2-core``) ≥ 1.0× Triton with two instances,
  ≥ 1.0× FastAPI + ProcessPool with two uvicorn workers, ≥ 1.5× tensorgate with one front end;
- the same with every call on one connection: no worse than one front end (a connection lands on
  one front end), met when the repeats' range reaches 1.0×;
- ResNet50's goal rows stay met with the default front ends (the rows against raw ONNX Runtime
  and Triton: :data:`~bench.report.peer_goals.RESNET_GOAL`);
- the idle memory one more front end adds: ≤ 60 MB (the tree's PSS from 2 to 3 front ends, the
  memory the node pays; each process's RSS, which counts shared libraries in every process, is in
  the note);
- throughput against 1…8 front ends on a machine with more cores: reported when measured;
- SIGTERM under load, with the default front ends and after one was replaced, loses no accepted
  call (``drain``: ``python -m bench run --only drain``).
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import FRONT_ENDS, fmt_ratio, median, ratio, row
from bench.report.tiny_rows import versus
from bench.systems.catalog import GRPC_TENSORGATE, TWO_CORE_CONNECTIONS

MEMORY_MB = 60.0


def front_end_rows(sc: dict[str, Any], resnet_met: list[bool | None]) -> list[dict[str, Any]]:
    """The table's rows; ``resnet_met``: whether each ResNet50 row against raw ONNX Runtime and
    Triton was met."""
    two = sc.get("tiny-2core", {})
    sat = two.get("saturation", {})
    ours, one = GRPC_TENSORGATE["2-core"], GRPC_TENSORGATE["2-core, one front end"]
    where = f"2 cores, c=64 over {two.get('connections', TWO_CORE_CONNECTIONS)} connections"
    goal = "tiny gRPC: default front ends ≥ the peers' best two-worker setups, ≥ 1.5× one front end"
    rows = [
        versus(goal, sat, ours, ("triton-2w",), 1.0, where, group=FRONT_ENDS),
        versus(goal, sat, ours, ("fastapi-process-2w",), 1.0, where, group=FRONT_ENDS),
        versus(goal, sat, ours, one, 1.5, where, group=FRONT_ENDS),
        _one_connection(two.get("one_connection", {})),
        _resnet(resnet_met),
        _memory(sc.get("idle-rss", {}).get("front_ends", {})),
        *_drain(sc.get("drain", {})),
        row(
            "throughput against 1…8 front ends on a machine with more cores",
            "tiny MLP, c=64 over 8 connections",
            "reported",
            note="no machine with more cores in this run",
            group=FRONT_ENDS,
        ),
    ]
    return rows


def _drain(section: dict[str, Any]) -> list[dict[str, Any]]:
    """SIGTERM under load loses no accepted call (``drain`` scenario): a row per case."""
    rows = []
    for case, what in (("default", "default front ends"), ("replaced", "after a replaced one")):
        runs = section.get(case)
        if runs is None:
            continue
        count = len(runs["runs"])
        rows.append(
            row(
                "SIGTERM under load: no accepted call lost (CANCELLED, INTERNAL, reset)",
                f"MLP, {section['connections']} connections, {count} runs, {what}",
                "0 lost",
                f"{runs['lost']} lost in {runs['runs_with_losses']} of {count} runs",
                runs["lost"] == 0 and runs["errors"] == 0,
                f"{runs['ok']} ok, {runs['refused']} refused; {runs['errors']} runs failed",
                FRONT_ENDS,
            )
        )
    return rows


def _one_connection(section: dict[str, Any]) -> dict[str, Any]:
    goal = "tiny gRPC, one connection: default front ends no worse than one front end"
    case = "2 cores, c=64 on 1 connection: tensorgate-2w vs tensorgate-2w-1f"
    target = "≥ 1.0× within the repeats' range"
    ours, one = section.get("tensorgate-2w"), section.get("tensorgate-2w-1f")
    if not median(ours) or not median(one) or ours is None or one is None:
        return row(goal, case, target, group=FRONT_ENDS)
    r = ratio(ours, one)
    note = f"{ours['rps']['median']:.0f} vs {one['rps']['median']:.0f} req/s"
    return row(goal, case, target, fmt_ratio(r), r[2] >= 1.0, note, FRONT_ENDS)


def _resnet(met: list[bool | None]) -> dict[str, Any]:
    goal = "ResNet50's goal rows stay met with the default front ends"
    case = "ResNet50 against raw ONNX Runtime and Triton (1 pinned core; 2 cores)"
    measured = [m for m in met if m is not None]
    if not measured:
        return row(goal, case, "all met", group=FRONT_ENDS)
    value = f"{sum(measured)} of {len(measured)} met"
    return row(goal, case, "all met", value, all(measured), group=FRONT_ENDS)


def _memory(section: dict[str, Any]) -> dict[str, Any]:
    goal = "idle memory per extra front end"
    case = "demo model, one worker: 2 → 3 front ends"
    target = f"≤ {MEMORY_MB:.0f} MB"
    extra = section.get("per_extra_mb")
    if not extra:
        return row(goal, case, target, group=FRONT_ENDS)
    pss = extra["tree_pss"]
    note = (
        f"the tree's RSS +{extra['tree_rss']:.1f} MB; a front end's own RSS "
        f"{extra['front_end_rss']:.1f} MB (shared libraries counted in each process)"
    )
    return row(goal, case, target, f"+{pss:.1f} MB PSS", pss <= MEMORY_MB, note, FRONT_ENDS)
