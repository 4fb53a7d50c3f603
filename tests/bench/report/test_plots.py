"""The report's plots: one colour per system everywhere, every line in a legend, axes labelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from bench.report.plots import figures, system_colour, write_plots
from bench.systems.catalog import CATALOG

SWEPT = ("echo", "tensorgate", "tensorgate-rest", "triton", "kserve-grpc", "fastapi-inline")


def _stat(value: float) -> dict[str, float]:
    return {"median": value, "min": value, "max": value, "n": 2}


def _results() -> dict[str, Any]:
    sweep = {
        name: {
            str(c): {"rps": _stat(1000.0 + i * 100 + c), "p99_ms": _stat(0.5 * c + i)}
            for c in (1, 4, 64)
        }
        for i, name in enumerate(SWEPT)
    }
    timeline = [
        {"t": t, "rps": 10.0 + t, "p50_ms": 1.0, "p90_ms": 2.0, "p99_ms": 3.0} for t in range(5)
    ]
    ramp = {
        "model": "mlp",
        "layout": "1-core",
        "step_s": 1.0,
        "systems": {"tensorgate": {"timeline": timeline}, "mlserver": {"timeline": timeline}},
    }
    points = {
        f: {"goodput": _stat(900.0 * float(f)), "p99_ms": _stat(10.0 * float(f))}
        for f in ("1", "2")
    }
    overload = {
        "mlp": {
            "system": "tensorgate",
            "layout": "1-core",
            "capacity_rps": 1000.0,
            "points": points,
        },
        "resnet50": {
            "system": "tensorgate-2w",
            "layout": "2-core",
            "capacity_rps": 25.0,
            "points": points,
        },
    }
    return {"scenarios": {"tiny": {"sweep": sweep}, "ramp": ramp, "overload": overload}}


def _lines(fig: Figure) -> list[Any]:
    return [line for ax in fig.axes for line in ax.get_lines()]


def _legend_texts(fig: Figure) -> set[str]:
    legends = [legend for ax in fig.axes if (legend := ax.get_legend()) is not None]
    return {t.get_text() for legend in legends for t in legend.get_texts()}


@pytest.fixture(scope="module")
def figs() -> dict[str, Figure]:
    return figures(_results())


def test_every_line_is_in_a_legend_and_every_axis_is_labelled(figs: dict[str, Figure]) -> None:
    assert set(figs) == {"sweep.png", "ramp.png", "overload.png"}
    for name, fig in figs.items():
        labels = {line.get_label() for line in _lines(fig)}
        assert labels <= _legend_texts(fig), (name, labels - _legend_texts(fig))
        for ax in fig.axes:
            assert ax.get_ylabel(), (name, ax.get_title())
        panels = [ax for ax in fig.axes if ax.get_title()]  # a twin axis shares its panel's x
        assert panels and all(ax.get_xlabel() for ax in panels), name


def test_each_system_keeps_one_colour_in_every_panel_and_plot(figs: dict[str, Figure]) -> None:
    seen: dict[str, set[str]] = {}
    for fig in figs.values():
        for line in _lines(fig):
            system = line.get_label().split(" ")[0]
            if system in CATALOG:
                seen.setdefault(system, set()).add(to_hex(line.get_color()))
    assert set(SWEPT) <= set(seen)
    for system, colours in seen.items():
        assert colours == {system_colour(system)}, system


def test_sweep_plots_throughput_and_p99_for_every_swept_system(figs: dict[str, Figure]) -> None:
    fig = figs["sweep.png"]
    throughput, p99 = fig.axes
    assert [line.get_label() for line in throughput.get_lines()] == list(SWEPT)
    assert [line.get_label() for line in p99.get_lines()] == [f"{n} p99" for n in SWEPT]
    assert "p99" in p99.get_ylabel() and "concurrency" in p99.get_xlabel()


def test_no_two_systems_share_a_colour() -> None:
    colours = [system_colour(name) for name in CATALOG]
    assert len(set(colours)) == len(colours)


def test_write_plots_writes_pngs(tmp_path: Path) -> None:
    written = write_plots(_results(), tmp_path)
    assert sorted(written) == ["overload.png", "ramp.png", "sweep.png"]
    for name in written:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
