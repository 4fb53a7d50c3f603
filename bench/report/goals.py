"""The performance goals as ratios from one run's results: met, missed, or n/a (not measured).

:func:`compute` returns every row of issue 12's goal table (group ``issue 12``), in its order,
whether or not this run measured it, then the still-open goals of earlier issues (overload,
memory; group ``earlier``). A ratio is the ratio of medians; its range combines the repeats'
extremes (worst min / best max and back), so a ratio whose range straddles the target is visibly
uncertain. tensorgate's gRPC rows compare its better configuration (batching off, or on with
timeout 0: :data:`bench.systems.catalog.GRPC_TENSORGATE`) and name it.
"""

from __future__ import annotations

from typing import Any

from bench.systems.catalog import GRPC_TENSORGATE
from bench.systems.tracing import TRACING_CONTROL

ONE_CORE = "1-core: "
ISSUE = "issue 12"
EARLIER = "earlier"
Summary = dict[str, Any]


def _median(summary: Summary | None, key: str = "rps") -> float | None:
    if not summary or key not in summary:
        return None
    value = summary[key]["median"]
    return float(value) if value else None


def _ratio(a: Summary, b: Summary, key: str = "rps") -> tuple[float, float, float]:
    return (
        a[key]["median"] / b[key]["median"],
        a[key]["min"] / b[key]["max"],
        a[key]["max"] / b[key]["min"],
    )


def _fmt(r: tuple[float, float, float]) -> str:
    return f"{r[0]:.2f}× ({r[1]:.2f}–{r[2]:.2f})"


def percent_spread(s: dict[str, Any]) -> str:
    """A median / min / max of fractions, as ``median (min–max)`` in percent; with the median's
    95 % interval when ``s`` has one (``ci``), ``median (95 % CI lo–hi; min–max)``."""
    ci = s.get("ci")
    if ci:
        return f"{s['median']:.1%} (95% CI {ci[0]:.1%}–{ci[1]:.1%}; {s['min']:.1%}–{s['max']:.1%})"
    return f"{s['median']:.1%} ({s['min']:.1%}–{s['max']:.1%})"


def _row(
    goal: str,
    case: str,
    target: str,
    value: str = "not measured",
    met: bool | None = None,
    note: str = "",
    group: str = ISSUE,
) -> dict[str, Any]:
    return {
        "group": group,
        "goal": goal,
        "case": case,
        "target": target,
        "value": value,
        "met": met,
        "note": note,
    }


def _best(section: dict[str, Any], names: tuple[str, ...]) -> str | None:
    measured = [n for n in names if _median(section.get(n))]
    return max(measured, key=lambda n: section[n]["rps"]["median"], default=None)


def _versus(
    goal: str,
    section: dict[str, Any],
    ours: tuple[str, ...],
    theirs: tuple[str, ...],
    minimum: float,
    where: str,
    key: str = "rps",
) -> dict[str, Any]:
    """``ours`` (best of) against ``theirs`` (best of) on ``key``: met when ≥ ``minimum``×."""
    a, b = _best(section, ours), _best(section, theirs)
    case = f"{where}: {a or ' / '.join(ours)} vs {b or ' / '.join(theirs)}"
    target = f"≥ {minimum}×"
    if a is None or b is None or not _median(section[b], key) or not _median(section[a], key):
        return _row(goal, case, target)
    r = _ratio(section[a], section[b], key)
    unit = "img/s" if section[a][key]["median"] < 100 else "req/s"
    note = f"{section[a][key]['median']:.1f} vs {section[b][key]['median']:.1f} {unit}"
    return _row(goal, case, target, _fmt(r), r[0] >= minimum, note)


def compute(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every goal row: issue 12's table in its order, then the earlier issues' open goals."""
    sc = results.get("scenarios", {})
    sat1 = sc.get("tiny", {}).get("saturation", {})
    sat2 = sc.get("tiny-2core", {}).get("saturation", {})
    tg1, tg2 = GRPC_TENSORGATE["1-core"], GRPC_TENSORGATE["2-core"]
    g1 = "tiny gRPC, c=64: ≥ 1.0× Triton (same model and cores, dynamic batching on)"
    g4 = "tiny vs MLServer best: ≥ 2× on 1 core, ≥ 3× on 2 cores"
    g5 = "tiny vs KServe 0.21's Python ModelServer (gRPC v2 and REST v1): ≥ 2×"
    mlservers1 = ("mlserver", "mlserver-batch")
    mlservers2 = ("mlserver-pw2", "mlserver-pw2-batch")
    rows = [
        _versus(g1, sat1, tg1, ("triton",), 1.0, "1 server core"),
        _versus(g1, sat2, tg2, ("triton-2w",), 1.0, "2 cores"),
        _versus("tiny gRPC, 1 server core, c=64: ≥ 0.7× echo", sat1, tg1, ("echo",), 0.7, "1 core"),
        _cpu_row(sat1, tg1),
        _light_row(sc),
        _versus(g4, sat1, tg1, mlservers1, 2.0, "1 server core"),
        _versus(g4, sat2, tg2, mlservers2, 3.0, "2 cores"),
        _versus(g5, sat1, tg1, ("kserve-grpc",), 2.0, "gRPC, 1 server core"),
        _versus(g5, sat1, ("tensorgate-rest",), ("kserve-rest",), 2.0, "REST, 1 server core"),
        _versus(
            "REST tiny vs FastAPI inline (REST against REST): ≥ 0.6×",
            sat1,
            ("tensorgate-rest",),
            ("fastapi-inline",),
            0.6,
            "1 server core",
        ),
        *_resnet_rows(sc.get("resnet50", {}).get("runs", {})),
        _batching_row(sc.get("batching", {})),
    ]
    return rows + _tracing_rows(sc.get("tracing", {})) + _earlier(sc)


TRACING = "issue 10"
TRACING_GOALS = {"ratio 0": 0.01, "ratio 1.0": 0.10}
"""Most throughput tracing may cost at each sample ratio (tiny MLP, one server core)."""


def _tracing_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 10's goals: tracing's throughput cost against tracing off, saturating."""
    sat = section.get("mlp", {})
    rows = []
    for label, most in TRACING_GOALS.items():
        goal, case, target = (
            f"tracing cost at sample {label}",
            "tiny MLP, 1 server core",
            f"≤ {most:.0%}",
        )
        if (
            not section.get("available")
            or not _median(sat.get(label))
            or not _median(sat.get("off"))
        ):
            rows.append(_row(goal, case, target, group=TRACING))
            continue
        note = f"{sat[label]['rps']['median']:.0f} vs {sat['off']['rps']['median']:.0f} req/s"
        side = section.get("side_by_side", {}).get("cost", {}).get(label)
        paired = section.get("paired_cost", {}).get(label)
        if side and side.get("n"):
            # Met when the median's 95 % interval lies within the goal (the median, without one).
            ci = side.get("ci")
            cost, value = ci[1] if ci else side["median"], percent_spread(side)
            note = f"CPU per request served side by side, median of {side['n']} rounds"
            control = section["side_by_side"]["cost"].get(TRACING_CONTROL)
            if control and control.get("n"):
                note += f" (a second off against off: {percent_spread(control)})"
            if paired and paired.get("n"):
                note += f"; in turn: {percent_spread(paired)} of throughput"
        elif paired and paired.get("n"):
            cost, value = paired["median"], percent_spread(paired)
            note += f"; median of {paired['n']} paired rounds (range over rounds)"
        else:  # reports from before paired rounds
            r = _ratio(sat[label], sat["off"])
            cost = 1 - r[0]
            value = f"{cost:.1%} ({1 - r[2]:.1%}–{1 - r[1]:.1%})"
        rows.append(_row(goal, case, target, value, cost <= most, note, TRACING))
    return rows


def _cpu_row(sat: dict[str, Any], ours: tuple[str, ...]) -> dict[str, Any]:
    goal = "tiny gRPC, 1 server core, c=64: server CPU ≤ 1.5× echo's per request"
    key = "server_cpu_us_per_request"
    a = _best(sat, ours)
    case = f"1 core: {a or ' / '.join(ours)} vs echo, CPU µs per request"
    if a is None or not _median(sat.get("echo"), key) or not _median(sat[a], key):
        return _row(goal, case, "≤ 1.5×")
    r = _ratio(sat[a], sat["echo"], key)
    note = f"{sat[a][key]['median']:.0f} vs {sat['echo'][key]['median']:.0f} µs"
    return _row(goal, case, "≤ 1.5×", _fmt(r), r[0] <= 1.5, note)


def _light_row(sc: dict[str, Any]) -> dict[str, Any]:
    goal = "tiny, c=1: p50 ≤ echo p50 + model time + 0.15 ms"
    light = sc.get("tiny", {}).get("light", {})
    model_us = sc.get("limits", {}).get("mlp_model_us")
    ours = [n for n in GRPC_TENSORGATE["1-core"] if _median(light.get(n), "p50_ms")]
    name = min(ours, key=lambda n: light[n]["p50_ms"]["median"], default="tensorgate")
    tg, echo = light.get(name), light.get("echo")
    case = f"1 server core: {name} vs echo"
    if tg is None or echo is None or model_us is None:
        return _row(goal, case, "overhead ≤ 0.15 ms")
    if not _median(tg, "p50_ms") or not _median(echo, "p50_ms"):
        return _row(goal, case, "overhead ≤ 0.15 ms")
    model_ms = model_us / 1000
    overhead = [tg["p50_ms"][k] - echo["p50_ms"]["median"] - model_ms for k in ("median", "min")]
    top = tg["p50_ms"]["max"] - echo["p50_ms"]["median"] - model_ms
    value = f"overhead {overhead[0]:.3f} ms ({overhead[1]:.3f}–{top:.3f})"
    note = (
        f"{name} p50 {tg['p50_ms']['median']:.3f} ms, echo {echo['p50_ms']['median']:.3f} "
        f"ms, model {model_ms:.3f} ms"
    )
    return _row(goal, case, "overhead ≤ 0.15 ms", value, overhead[0] <= 0.15, note)


def _resnet_rows(runs: dict[str, Any]) -> list[dict[str, Any]]:
    goal = "ResNet50 vs raw ORT best split: ≥ 0.95×, and ≥ Triton"
    pinned = {k[len(ONE_CORE) :]: v for k, v in runs.items() if k.startswith(ONE_CORE)}
    unpinned = {k: v for k, v in runs.items() if not k.startswith(ONE_CORE)}
    rows = []
    for where, section, ours, triton in (
        ("1 pinned core", pinned, ("tensorgate",), "triton"),
        ("2 cores", unpinned, ("tensorgate-2w", "tensorgate-1w2t"), "triton-2w"),
    ):
        raw = tuple(k for k in section if k.startswith("raw "))
        rows.append(_versus(goal, section, ours, raw or ("raw ONNX Runtime",), 0.95, where))
        rows.append(_versus(goal, section, ours, (triton,), 1.0, where))
    return rows


def _batching_row(section: dict[str, Any]) -> dict[str, Any]:
    goal = "batching on with timeout 0 never below batching off"
    target = "≥ 1.0× at every point (within the repeats' range)"
    case = "1 server core: on (timeout 0) vs off, each model and concurrency"
    ratios = []
    for point in section.get("points", []):
        summaries = section.get(point["key"], {})
        on, off = summaries.get("on (timeout 0)"), summaries.get("off")
        if on is not None and off is not None and _median(on) and _median(off):
            ratios.append((_ratio(on, off), point["key"]))
    if not ratios:
        return _row(goal, case, target)
    (worst, key) = min(ratios)
    met = all(r[2] >= 1.0 for r, _ in ratios)
    below = [k for r, k in ratios if r[2] < 1.0]
    note = f"worst point {key}" + (f"; below at {', '.join(below)}" if below else "")
    return _row(goal, case, target, _fmt(worst), met, note)


def _earlier(sc: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for model, case in sc.get("overload", {}).items():
        if isinstance(case, dict) and "points" in case:
            rows += _overload_rows(model, case)
    rss = sc.get("idle-rss", {})
    if "idle_mb" in rss:
        rows.append(
            _row(
                "gateway RSS at idle (demo model)",
                "auto workers",
                "< 150 MB",
                f"{rss['idle_mb']:.1f} MB",
                rss["idle_mb"] < 150,
                f"workers: {', '.join(f'{w:.0f}' for w in rss.get('workers_mb', []))} MB",
                EARLIER,
            )
        )
    return rows + _reliability_rows(sc.get("soak", {}), sc.get("chaos", {}))


RELIABILITY = "issue 14"


def _reliability_rows(soak: dict[str, Any], chaos: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    flat = soak.get("flatness", {})
    if "result" in soak:
        case = f"MLP, open loop at {soak['rps']:.0f} req/s for {soak['duration_s'] / 60:.1f} min"
        sent = soak["result"].get("rps", 0) * soak["duration_s"]
        rows.append(
            _row(
                "soak: no failed request",
                case,
                "0 failed",
                f"{soak['failed']} failed of {sent:.0f}",
                soak["failed"] == 0,
                ", ".join(f"{k}: {v}" for k, v in soak["result"].get("statuses", {}).items()),
                RELIABILITY,
            )
        )
        series = {k: v for k, v in flat.items() if k.endswith("_mb")}
        value = ", ".join(f"{k[:-3]} {v['start']:.1f}→{v['end']:.1f} MB" for k, v in series.items())
        if "fds" in flat:
            value += f"; fds {flat['fds']['start']:.0f}→{flat['fds']['end']:.0f}"
        rows.append(
            _row(
                "soak: gateway and worker RSS flat, fds flat",
                case,
                "end within 5 % of start; fds +0",
                value,
                flat.get("flat"),
                group=RELIABILITY,
            )
        )
    if "result" in chaos:
        statuses = chaos["result"].get("statuses", {})
        rows.append(
            _row(
                "chaos: goodput and failures while workers are killed",
                f"2 workers, one SIGKILLed every {chaos['kill_every_s']:.0f} s, "
                f"{chaos['rps']:.0f} req/s offered",
                "reported",
                f"goodput {chaos['goodput_ratio']:.2f}× offered; {chaos['failed']} failed, "
                f"{len(chaos.get('kills', []))} kills",
                None,
                ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())),
                RELIABILITY,
            )
        )
    return rows


def _overload_rows(model: str, case: dict[str, Any]) -> list[dict[str, Any]]:
    where = f"{case.get('system', 'tensorgate')}, open loop at 2× capacity"
    points = case["points"]
    at_cap, at_2x = points.get("1"), points.get("2")
    capacity = case.get("capacity_rps", 0.0)
    if not at_cap or not at_2x or not capacity or "goodput" not in at_2x:
        return [_row(f"overload ({model})", where, "", group=EARLIER)]
    goodput = at_2x["goodput"]["median"]
    statuses = at_2x.get("statuses", {})
    rejected = sum(v for k, v in statuses.items() if k in ("Unavailable", "ResourceExhausted"))
    # A request past its deadline ends as DEADLINE_EXCEEDED or, when the server's copy of the
    # deadline fires first, CANCELLED: both are time-outs, not fast rejections.
    timed_out = statuses.get("DeadlineExceeded", 0) + statuses.get("Canceled", 0)
    p99_cap = at_cap.get("p99_ms", {}).get("median", 0.0)
    p99_2x = at_2x.get("p99_ms", {}).get("median", 0.0)
    lag = at_2x.get("send_lag_p99_ms", {}).get("median")
    note = f"client send lag p99 {lag:.1f} ms" if lag is not None else ""
    return [
        _row(
            f"overload goodput ({model})",
            where,
            "≥ 0.9 × capacity",
            f"{goodput / capacity:.2f}× ({goodput:.1f} of {capacity:.1f} req/s)",
            goodput / capacity >= 0.9,
            note,
            EARLIER,
        ),
        _row(
            f"overload p99 of accepted ({model})",
            where,
            "≤ 3 × p99 at capacity",
            f"{p99_2x:.1f} ms vs {p99_cap:.1f} ms",
            p99_2x <= 3 * p99_cap if p99_cap else None,
            group=EARLIER,
        ),
        _row(
            f"overload excess rejected, not timed out ({model})",
            where,
            "UNAVAILABLE/RESOURCE_EXHAUSTED, no DEADLINE_EXCEEDED",
            f"rejected {rejected}, timed out {timed_out}",
            timed_out == 0 and (rejected > 0 or goodput / capacity >= 1.5),
            ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())),
            EARLIER,
        ),
    ]
