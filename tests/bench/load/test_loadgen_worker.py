"""bench.load.loadgen_worker: what one load-generator process counts, and its part's round trip."""

from __future__ import annotations

from bench.load.loadgen_worker import Part, Recorder

S = 1_000_000_000


def test_recorder_counts_only_the_window_but_keeps_the_timeline() -> None:
    rec = Recorder(start_ns=0, warm_ns=1 * S, end_ns=3 * S, per_second_latency=True)
    rec.add(0, S // 2, "OK", "")  # warmup: timeline only
    rec.add(S, S + 2_000_000, "OK", "")
    rec.add(2 * S, 2 * S + 5_000_000, "Unavailable", "rpc error: code = Unavailable desc = full")
    rec.add(3 * S, 3 * S + 1, "OK", "")  # after the window
    part = rec.part
    assert part.statuses == {"OK": 1, "Unavailable": 1}
    assert part.errors == {"rpc error: code = Unavailable desc = full": 1}
    assert part.latency.count == 1
    assert part.timeline == {0: [1, 0], 1: [1, 0], 2: [1, 1], 3: [1, 0]}
    assert Part.from_dict(part.to_dict()).timeline == part.timeline
