"""Goal rows that several goal tables share: one system's throughput against another's, server
CPU per request against echo's, the light-load (c=1) p50 over a reference's, and ResNet50 against
raw ONNX Runtime. Each takes its goal text, bar and group (a key of
:data:`~bench.report.goal_rows.GROUPS`)."""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import PEERS, best, fmt_ratio, median, ratio, row
from bench.systems.catalog import GRPC_TENSORGATE


def versus(
    goal: str,
    section: dict[str, Any],
    ours: tuple[str, ...],
    theirs: tuple[str, ...],
    minimum: float,
    where: str,
    key: str = "rps",
    group: str = PEERS,
) -> dict[str, Any]:
    """``ours`` (best of) against ``theirs`` (best of) on ``key``: met when ≥ ``minimum``×."""
    a, b = best(section, ours), best(section, theirs)
    case = f"{where}: {a or ' / '.join(ours)} vs {b or ' / '.join(theirs)}"
    target = f"≥ {minimum}×"
    if a is None or b is None or not median(section[b], key) or not median(section[a], key):
        return row(goal, case, target, group=group)
    r = ratio(section[a], section[b], key)
    unit = "img/s" if section[a][key]["median"] < 100 else "req/s"
    note = f"{section[a][key]['median']:.1f} vs {section[b][key]['median']:.1f} {unit}"
    return row(goal, case, target, fmt_ratio(r), r[0] >= minimum, note, group)


def cpu_row(
    goal: str, sat: dict[str, Any], ours: tuple[str, ...], most: float, group: str = PEERS
) -> dict[str, Any]:
    """Server CPU µs per request of ``ours`` (its best by throughput) against echo's: met when
    ≤ ``most``×."""
    key = "server_cpu_us_per_request"
    a = best(sat, ours)
    case = f"1 core: {a or ' / '.join(ours)} vs echo, CPU µs per request"
    target = f"≤ {most}×"
    if a is None or not median(sat.get("echo"), key) or not median(sat[a], key):
        return row(goal, case, target, group=group)
    r = ratio(sat[a], sat["echo"], key)
    note = f"{sat[a][key]['median']:.0f} vs {sat['echo'][key]['median']:.0f} µs"
    return row(goal, case, target, fmt_ratio(r), r[0] <= most, note, group)


def light_row(goal: str, sc: dict[str, Any], most_ms: float, group: str = PEERS) -> dict[str, Any]:
    """At concurrency 1 on one server core: tensorgate's best gRPC p50 less echo's p50 and the
    MLP's model time (``limits``), in ms: met when ≤ ``most_ms``."""
    light = sc.get("tiny", {}).get("light", {})
    model_us = sc.get("limits", {}).get("mlp_model_us")
    ours = [n for n in GRPC_TENSORGATE["1-core"] if median(light.get(n), "p50_ms")]
    name = min(ours, key=lambda n: light[n]["p50_ms"]["median"], default="tensorgate")
    tg, echo = light.get(name), light.get("echo")
    case = f"1 server core: {name} vs echo"
    target = f"overhead ≤ {most_ms} ms"
    if tg is None or echo is None or model_us is None:
        return row(goal, case, target, group=group)
    if not median(tg, "p50_ms") or not median(echo, "p50_ms"):
        return row(goal, case, target, group=group)
    model_ms = model_us / 1000
    overhead = [tg["p50_ms"][k] - echo["p50_ms"]["median"] - model_ms for k in ("median", "min")]
    top = tg["p50_ms"]["max"] - echo["p50_ms"]["median"] - model_ms
    value = f"overhead {overhead[0]:.3f} ms ({overhead[1]:.3f}–{top:.3f})"
    note = (
        f"{name} p50 {tg['p50_ms']['median']:.3f} ms, echo {echo['p50_ms']['median']:.3f} "
        f"ms, model {model_ms:.3f} ms"
    )
    return row(goal, case, target, value, overhead[0] <= most_ms, note, group)


def p50_over(
    goal: str, light: dict[str, Any], ours: str, reference: str, most_ms: float, group: str
) -> dict[str, Any]:
    """At concurrency 1 (``light``: the ``tiny`` scenario's c=1 points): ``ours``' p50 less
    ``reference``'s, in ms, the difference of medians with the range the rounds allow (our lowest
    less their highest, our highest less their lowest): met when the difference of medians is
    ≤ ``most_ms``."""
    case = f"1 server core, c=1: {ours} vs {reference}"
    target = f"p50 ≤ {reference}'s + {most_ms:.2f} ms"
    a, b = light.get(ours), light.get(reference)
    if not median(a, "p50_ms") or not median(b, "p50_ms") or a is None or b is None:
        return row(goal, case, target, group=group)
    p, q = a["p50_ms"], b["p50_ms"]
    over = p["median"] - q["median"]
    value = f"{over:+.3f} ms ({p['min'] - q['max']:+.3f}–{p['max'] - q['min']:+.3f})"
    note = f"p50 {p['median']:.3f} vs {q['median']:.3f} ms"
    return row(goal, case, target, value, over <= most_ms, note, group)


ONE_CORE = "1-core: "
"""The prefix of the ResNet50 runs on one pinned server core."""
RESNET_TENSORGATE = {
    "1 pinned core": ("tensorgate",),
    "2 cores": ("tensorgate-2w", "tensorgate-1w2t"),
}
"""tensorgate's ResNet50 configurations on ONNX Runtime per layout; rows compare the better."""


def resnet_layouts(runs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``resnet50`` scenario's runs by layout: ``1 pinned core`` (the ``1-core:`` keys, the
    prefix removed) and ``2 cores`` (the rest)."""
    return {
        "1 pinned core": {k[len(ONE_CORE) :]: v for k, v in runs.items() if k.startswith(ONE_CORE)},
        "2 cores": {k: v for k, v in runs.items() if not k.startswith(ONE_CORE)},
    }


def raw_ort_rows(
    goal: str, runs: dict[str, Any], minimum: float, group: str
) -> list[dict[str, Any]]:
    """ResNet50 on one pinned core and on two: tensorgate on ONNX Runtime (the better of
    :data:`RESNET_TENSORGATE`) against the best raw ONNX Runtime configuration (``raw ...``
    keys): met at ≥ ``minimum``×."""
    rows = []
    for where, section in resnet_layouts(runs).items():
        raw = tuple(k for k in section if k.startswith("raw ")) or ("raw ONNX Runtime",)
        ours = RESNET_TENSORGATE[where]
        rows.append(versus(goal, section, ours, raw, minimum, where, group=group))
    return rows


def resnet_rows(
    goal: str, runs: dict[str, Any], raw_minimum: float, group: str = PEERS
) -> list[dict[str, Any]]:
    """ResNet50's rows on one pinned core and on two: tensorgate against the best raw ONNX
    Runtime configuration (met at ≥ ``raw_minimum``×) and against Triton (≥ 1.0×)."""
    raw = raw_ort_rows(goal, runs, raw_minimum, group)
    rows = []
    for found, (where, section) in zip(raw, resnet_layouts(runs).items(), strict=True):
        triton = "triton" if where == "1 pinned core" else "triton-2w"
        ours = RESNET_TENSORGATE[where]
        rows += [found, versus(goal, section, ours, (triton,), 1.0, where, group=group)]
    return rows
