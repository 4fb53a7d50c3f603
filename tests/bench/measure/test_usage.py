"""bench.measure.usage: a server tree's CPU split by role (which thread counts where)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.measure.usage import CPU_ROLES, by_role, cpu_by_role, role_of


def test_threads_are_split_into_loop_threads_grpc_and_workers() -> None:
    before = {(10, 10, "python"): 1.0, (10, 11, "python"): 0.5, (10, 12, "event_engine"): 0.2}
    after = {
        (10, 10, "python"): 1.75,  # the root's main thread: the event loop
        (10, 11, "python"): 0.75,
        (10, 13, "python"): 0.125,  # started during the point: counts from zero
        (10, 12, "event_engine"): 0.5,
        (20, 20, "python"): 0.25,  # a worker process, every thread of it
        (20, 21, "onnxruntime"): 0.25,
    }
    assert cpu_by_role(before, after, 10) == {
        "gateway loop": 0.75,
        "gateway threads": 0.375,
        "gRPC threads": 0.5 - 0.2,
        "workers": 0.5,
    }
    assert tuple(cpu_by_role({}, {}, 10)) == CPU_ROLES


def test_processes_below_a_pid_are_told_apart_by_role(tmp_path: Path) -> None:
    """Children started as ``python -m workers`` and ``python -m gateway.frontend`` (stand-in
    modules that wait for their stdin to close) are a worker and a front end."""
    wait = "import sys\nsys.stdin.read()\n"
    (tmp_path / "workers.py").write_text(wait)
    (tmp_path / "gateway").mkdir()
    (tmp_path / "gateway" / "__init__.py").write_text("")
    (tmp_path / "gateway" / "frontend.py").write_text(wait)
    argvs = [["-m", "workers"], ["-m", "gateway.frontend"]]
    children = [
        subprocess.Popen([sys.executable, *argv], cwd=tmp_path, stdin=subprocess.PIPE)
        for argv in argvs
    ]
    try:
        roles = by_role(os.getpid())  # other tests' children may be there too
        worker, front_end = children[0].pid, children[1].pid
        assert worker in roles["worker"] and worker not in roles["front end"]
        assert front_end in roles["front end"] and front_end not in roles["worker"]
        assert role_of(os.getpid()) == "gateway"  # anything else
    finally:
        for child in children:
            assert child.stdin is not None
            child.stdin.close()
            child.wait()
