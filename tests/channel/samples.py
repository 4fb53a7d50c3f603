"""Sample message parts the channel's message tests share."""

from __future__ import annotations

from channel.messages import TensorDesc
from channel.telemetry import WorkerStats

X = TensorDesc("x", "float32", (8, 64), 4096, 2048)
"""An input tensor's descriptor: 8 rows of 64 float32 at offset 4096 of the input area."""

STATS: WorkerStats = {
    "pid": 1234,
    "start_time": 1.5,
    "cpu_seconds": 0.25,
    "rss_bytes": 4096,
    "runs": 3,
    "run_errors": 1,
    "wakeups": 2,
    "load_seconds": {"m:3": 0.5},
}
"""A worker's figures as a ping reply carries them."""
