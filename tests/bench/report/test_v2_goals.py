"""KServe v2 against the v2 peers: tensorgate-v2 against each peer's best, reported without a
bar."""

from __future__ import annotations

from bench.report import goals
from bench.report.goal_rows import V2
from tests.bench.report.summaries import point


def test_tensorgate_v2_is_compared_with_each_v2_peers_best() -> None:
    sat = {
        "tensorgate-v2": point(1200, 1100, 1300),
        "triton": point(1000, 900, 1100),
        "mlserver": point(400),
        "mlserver-batch": point(600),
    }
    rows = [
        g for g in goals.compute({"scenarios": {"tiny": {"saturation": sat}}}) if g["group"] == V2
    ]
    assert [r["case"] for r in rows] == [
        "tensorgate-v2 vs triton",
        "tensorgate-v2 vs mlserver-batch",
        "tensorgate-v2 vs kserve-grpc",
    ]
    triton, mlserver, kserve = rows
    assert triton["value"] == "1.20× (1.00–1.44)" and triton["note"] == "1200 vs 1000 req/s"
    assert mlserver["value"].startswith("2.00×")
    assert all(r["met"] is None and r["target"] == "reported" for r in rows)
    assert kserve["value"] == "not measured"
