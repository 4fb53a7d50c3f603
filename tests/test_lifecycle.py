"""The collector, once the gateway serves: the start-up's garbage collected, the rest frozen, the
young generation collected less often (run in a child process: settling would change this one's
collector for every later test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import gc, weakref
from gateway.app import YOUNG_COLLECTION_THRESHOLD, settle_heap

class Node:
    pass

first, second = Node(), Node()
first.other, second.other = second, first  # a cycle: only the collector frees it
cycle = weakref.ref(first)
del first, second
gc.disable()  # nothing but settle_heap collects
settle_heap()
print(cycle() is None, gc.get_freeze_count() > 0)
print(gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 10, 10) != (700, 10, 10))
"""


def test_settling_collects_start_up_garbage_freezes_the_rest_raises_the_threshold() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.split() == ["True", "True", "True"]
