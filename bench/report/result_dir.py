"""A one-command measurement's report directory (``python -m bench grpcio``, ``python -m bench
otlp``): ``results.json``, ``README.md`` and one PNG."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from bench.report.plots import PLOT_DPI

Results = dict[str, Any]


@dataclass(frozen=True)
class ReportDir:
    """Writes a report directory: ``markdown(results, plotted)`` as ``README.md`` and
    ``figure(results)`` as the PNG named ``plot`` (when the results have points)."""

    plot: str
    markdown: Callable[[Results, bool], str]
    figure: Callable[[Results], Figure]

    def write(self, results: Results, out: Path) -> None:
        """Write ``results.json``, the PNG and ``README.md`` into ``out``."""
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
        plotted = bool(results.get("points"))
        if plotted:
            self.figure(results).savefig(out / self.plot, dpi=PLOT_DPI)
        (out / "README.md").write_text(self.markdown(results, plotted))

    def rebuild(self, out: Path) -> None:
        """Re-render ``out`` from its ``results.json``."""
        self.write(json.loads((out / "results.json").read_text()), out)
