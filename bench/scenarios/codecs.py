"""``python -m bench codecs``: CPU per call of the JPEG decoders and of the JSON body readers
(:mod:`bench.measure.codecs`), in this process, written to ``bench/results/<date>-codecs/``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bench.measure.codecs import image_decoders, json_paths
from bench.report import codecs_report
from bench.scenarios.runner import run_header

LIBRARIES = ("pillow", "simplejpeg", "pyturbojpeg", "pysimdjson", "orjson", "msgspec")


@dataclass(frozen=True)
class CodecsPlan:
    rounds: int = 7
    round_cpu_s: float = 0.2
    """CPU seconds each round of a figure takes at least."""

    def estimate_s(self) -> float:
        """Wall seconds, about: 2 sizes × (3 decoders × 2 + 1) and 6 JSON paths."""
        return (2 * 7 + 6) * (self.rounds + 1) * self.round_cpu_s * 1.3


def run(plan: CodecsPlan, out: Path) -> dict[str, Any]:
    began = time.monotonic()
    results: dict[str, Any] = {
        "kind": "codecs",
        "run": {**run_header(out.name, plan), "libraries": _versions()},
        "images": image_decoders(plan.rounds, plan.round_cpu_s),
        "json": json_paths(plan.rounds, plan.round_cpu_s),
    }
    results["run"]["elapsed_s"] = time.monotonic() - began
    codecs_report.write(results, out)
    return results


def _versions() -> dict[str, str]:
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found
