"""tensorgate over the KServe v2 protocol against the v2 peers, same protocol and request, same
run: the ratios are reported, without a bar.

- gRPC ModelInfer with the tensor in ``raw_input_contents`` (``tensorgate-v2``) against Triton,
  MLServer's best and KServe gRPC, tiny MLP, 1 server core, c=64.
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import V2, best, fmt_ratio, median, ratio, row

PEERS = (("triton",), ("mlserver", "mlserver-batch"), ("kserve-grpc",))
"""The v2 peers compared (each the best of its configurations)."""


def v2_rows(sc: dict[str, Any]) -> list[dict[str, Any]]:
    """tensorgate-v2 against each v2 peer at the tiny saturation point."""
    sat = sc.get("tiny", {}).get("saturation", {})
    return [_versus(sat, theirs) for theirs in PEERS]


def _versus(sat: dict[str, Any], theirs: tuple[str, ...]) -> dict[str, Any]:
    goal = "tiny gRPC v2 ModelInfer (raw_input_contents), 1 server core, c=64"
    peer = best(sat, theirs)
    case = f"tensorgate-v2 vs {peer or ' / '.join(theirs)}"
    ours = sat.get("tensorgate-v2")
    if peer is None or not median(ours) or ours is None:
        return row(goal, case, "reported", group=V2)
    r = ratio(ours, sat[peer])
    note = f"{ours['rps']['median']:.0f} vs {sat[peer]['rps']['median']:.0f} req/s"
    return row(goal, case, "reported", fmt_ratio(r), None, note, V2)
