"""Counts Python function calls in every process of a server under test (``bench calls``).

Loaded by the interpreter at start-up (this directory leads ``PYTHONPATH``) in each process the
server starts, workers included, when ``TENSORGATE_BENCH_PYCALLS`` names a directory. SIGUSR1
starts counting on the main thread (where the event loop and the worker's serving loop run);
SIGUSR2 stops and writes ``<dir>/<pid>.json``: the command line and the calls by function
(``file:first line:name``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from types import FrameType
from typing import Any

_counts: dict[str, int] = {}


def _profile(frame: FrameType, event: str, arg: Any) -> None:
    if event == "call":
        code = frame.f_code
        name = f"{code.co_filename}:{code.co_firstlineno}:{code.co_name}"
        _counts[name] = _counts.get(name, 0) + 1


def _start(signum: int, frame: FrameType | None) -> None:
    _counts.clear()
    sys.setprofile(_profile)


def _stop_into(directory: str) -> Any:
    def stop(signum: int, frame: FrameType | None) -> None:
        sys.setprofile(None)
        with open(os.path.join(directory, f"{os.getpid()}.json"), "w") as out:
            json.dump({"argv": " ".join(sys.argv), "calls": _counts}, out)

    return stop


_DIR = os.environ.get("TENSORGATE_BENCH_PYCALLS")
if _DIR:
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop_into(_DIR))
