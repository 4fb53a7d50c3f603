"""The run's status line: scenario, system, round, elapsed and time left; silent off a terminal."""

from __future__ import annotations

import io

from rich.console import Console

from bench.measure import progress
from bench.measure.points import interleaved
from bench.measure.progress import RunProgress, clock_text
from tests.support.fakes import FakeClock


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=160), out


def test_time_left_scales_with_how_long_finished_scenarios_took() -> None:
    clock = FakeClock(100.0)
    console, _ = _console(False)
    with RunProgress({"tiny": 10.0, "resnet50": 20.0}, console, clock.now) as run:
        assert run.left_s() == 30.0
        with run.scenario("tiny"):
            clock.advance(5)
            assert run.left_s() == 25.0  # 5 s of tiny's 10 left, then resnet50's 20
            clock.advance(15)  # tiny took 20 s: twice its estimate
        assert run.scale() == 2.0 and run.left_s() == 40.0
        with run.scenario("resnet50"):
            clock.advance(10)
            assert run.left_s() == 30.0
            run.step("triton · round 2/3")
            assert run.status() == (
                "resnet50 (1/2) · triton · round 2/3 · elapsed 0:30 · ~0:30 left"
            )


def test_scale_is_clamped_so_one_odd_scenario_cannot_run_away_with_the_estimate() -> None:
    clock = FakeClock(100.0)
    console, _ = _console(False)
    with RunProgress({"limits": 1.0, "tiny": 100.0}, console, clock.now) as run:
        with run.scenario("limits"):
            clock.advance(60)  # 60× its estimate (a peer venv was built)
        assert run.scale() == 3.0 and run.left_s() == 300.0


def test_steps_reach_the_active_line_and_are_dropped_when_none_is_shown() -> None:
    progress.step("nobody listens")  # no run: nothing to do, no error
    console, _ = _console(False)
    with RunProgress({"tiny": 1.0}, console, FakeClock(100.0).now) as run, run.scenario("tiny"):
        progress.step("echo · round 1/2")
        assert "echo · round 1/2" in run.status()
    progress.step("after the run")
    assert "after the run" not in run.status()


def test_nothing_is_written_when_not_on_a_terminal() -> None:
    console, out = _console(False)
    with RunProgress({"tiny": 1.0}, console) as run, run.scenario("tiny"):
        run.step("echo · round 1/2")
    assert out.getvalue() == ""


def test_the_line_is_drawn_on_a_terminal() -> None:
    console, out = _console(True)
    with RunProgress({"tiny": 60.0}, console, FakeClock(100.0).now) as run, run.scenario("tiny"):
        run.step("triton · round 1/3")
        console.print("a log line")  # printed above the live line
    text = out.getvalue()
    assert "a log line" in text
    assert "tiny (0/1) · triton · round 1/3 · elapsed 0:00 · ~1:00 left" in text


def test_clock_text() -> None:
    assert [clock_text(s) for s in (0, 59.6, 754.2, 3700)] == ["0:00", "1:00", "12:34", "1:01:40"]


def test_interleaved_rounds_name_each_job_and_round_on_the_line() -> None:
    console, _ = _console(False)
    seen: list[str] = []
    with (
        RunProgress({"overload": 1.0}, console, FakeClock(100.0).now) as run,
        run.scenario("overload"),
    ):

        def job() -> dict[str, float]:
            seen.append(run.status().split(" · elapsed")[0])
            return {"rps": 1.0}

        interleaved([("1", job), ("2", job)], 2, "tensorgate at {key}× capacity")
    assert seen == [
        f"overload (0/1) · tensorgate at {f}× capacity · round {r}/2"
        for r in (1, 2)
        for f in (1, 2)
    ]
