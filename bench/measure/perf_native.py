"""Native profiles with Linux ``perf``: where a process's CPU goes among its shared objects.

py-spy's ``--native`` mode pauses the process for every sample (a gateway drops to a few requests
per second), so its samples are waits. ``perf record`` samples from the kernel without stopping the
process: the split between the interpreter, uvloop, grpc's Cython core, ONNX Runtime, libc and the
kernel is what it shows. Needs ``perf`` (Debian's ``linux-perf``) and permission to profile (root,
or ``kernel.perf_event_paranoid`` ≤ 1).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

HZ = 997
TOP = 25
_ROW = re.compile(r"^\s+([\d.]+)%\s+(.+?)\s*$")


def available() -> str | None:
    """None when ``perf`` can be run here, else why not."""
    if shutil.which("perf") is None:
        return "perf is not installed (apt-get install linux-perf)"
    probe = subprocess.run(
        ["perf", "stat", "-e", "task-clock", "true"], capture_output=True, text=True, check=False
    )
    return None if probe.returncode == 0 else f"perf cannot profile here: {probe.stderr.strip()}"


def record(pid: int, seconds: float, data: Path) -> list[str]:
    """The command sampling ``pid`` (all its threads, call graphs) for ``seconds`` into ``data``."""
    return ["perf", "record", "-q", "-F", str(HZ), "-g", "-p", str(pid), "-o", str(data),
            "--", "sleep", f"{seconds:g}"]  # fmt: skip


def _rows(data: Path, sort: str) -> list[tuple[float, str]]:
    argv = ["perf", "report", "-i", str(data), "--stdio", "--no-children", "-g", "none",
            "--sort", sort, "--percent-limit", "0.3"]  # fmt: skip
    report = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        check=False,
    )
    return parse_report(report.stdout)[:TOP]


def parse_report(text: str) -> list[tuple[float, str]]:
    """``perf report --stdio -g none`` text → (self %, the row's names) per sample row."""
    rows = []
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            rows.append((float(match.group(1)), " ".join(match.group(2).split())))
    return rows


def summary(data: Path, title: str) -> list[str]:
    """Markdown: the process's samples by shared object, then by function (self time)."""
    lines = [f"## {title}", "", "| self % | shared object |", "|---|---|"]
    lines += [f"| {share:.1f} | `{name}` |" for share, name in _rows(data, "dso")]
    lines += ["", "| self % | shared object and function |", "|---|---|"]
    lines += [f"| {share:.1f} | `{name}` |" for share, name in _rows(data, "dso,sym")]
    return [*lines, ""]
