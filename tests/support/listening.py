"""The one port a tool started on port 0 listens on, once it does (Prometheus's
``--web.listen-address=127.0.0.1:0`` does not report it)."""

from __future__ import annotations

import subprocess

from bench.systems.listening import listening_ports
from tests.support.waits import until


def port_of(process: subprocess.Popen[bytes], what: str) -> int:
    """The one port ``process`` listens on, once it does (bounded); AssertionError if it exits
    first or listens on several."""
    found: set[int] = set()

    def listening() -> bool:
        found.update(listening_ports(process.pid))
        if not found and process.poll() is not None:
            raise AssertionError(f"{what} exited ({process.returncode}) before it listened")
        return bool(found)

    until(listening, f"{what} listening")
    assert len(found) == 1, f"{what} listens on several ports: {sorted(found)}"
    return found.pop()
