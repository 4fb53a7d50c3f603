"""One status line while a run goes: scenario, system and round, a bar, elapsed and time left.

:class:`RunProgress` draws it with ``rich`` (a live line under the log) when its console is a
terminal, and writes nothing otherwise. Scenarios report what they measure through :func:`step`,
which does nothing when no run is being shown (tests, ``python -m bench load``).

Time left: each scenario's estimate (seconds, from the plan: :mod:`bench.scenarios.estimates`),
scaled by how long the finished scenarios took against their own estimates (clamped to
0.5–3×), less the time already spent in the current one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType

from rich.console import Console, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table

_active: RunProgress | None = None
SCALE_LIMITS = (0.5, 3.0)
REFRESH_PER_S = 2.0


def step(text: str) -> None:
    """Say what the run is doing now (``"triton · round 2/3"``); a no-op when nothing is shown."""
    if _active is not None:
        _active.step(text)


def clock_text(seconds: float) -> str:
    """``754.2`` → ``12:34``; ``3700`` → ``1:01:40``."""
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class RunProgress:
    """The status line of one run over scenarios whose estimates are ``estimates_s`` (in order)."""

    def __init__(
        self,
        estimates_s: Mapping[str, float],
        console: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._estimates = dict(estimates_s)
        self._console = console or Console(stderr=True)
        self._clock = clock
        self._started = clock()
        self._finished: dict[str, float] = {}
        self._current = ""
        self._current_started = self._started
        self._step = "starting"
        self._live: Live | None = None

    def __enter__(self) -> RunProgress:
        global _active
        if self._console.is_terminal:
            self._live = Live(
                get_renderable=self.renderable,
                console=self._console,
                refresh_per_second=REFRESH_PER_S,
                transient=True,
            )
            self._live.start()
        _active = self
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        global _active
        _active = None
        if self._live is not None:
            self._live.stop()
            self._live = None

    @contextlib.contextmanager
    def scenario(self, name: str) -> Iterator[None]:
        """Mark ``name`` as running for the duration of the block."""
        self._current, self._current_started = name, self._clock()
        self.step("starting")
        try:
            yield
        finally:
            self._finished[name] = self._clock() - self._current_started
            self._current = ""

    def step(self, text: str) -> None:
        self._step = text
        if self._live is not None:
            self._live.refresh()

    def elapsed_s(self) -> float:
        return self._clock() - self._started

    def scale(self) -> float:
        """Actual ÷ estimated time of the finished scenarios (1 before any has finished)."""
        estimated = sum(self._estimates.get(n, 0.0) for n in self._finished)
        if estimated <= 0:
            return 1.0
        low, high = SCALE_LIMITS
        return min(high, max(low, sum(self._finished.values()) / estimated))

    def left_s(self) -> float:
        """Estimated seconds until the last scenario ends."""
        scale = self.scale()
        future = sum(
            est
            for name, est in self._estimates.items()
            if name not in self._finished and name != self._current
        )
        current = 0.0
        if self._current:
            spent = self._clock() - self._current_started
            current = max(0.0, self._estimates.get(self._current, 0.0) * scale - spent)
        return (future * scale) + current

    def status(self) -> str:
        """``scenario · step · elapsed 1:23 · ~4:56 left``: the line's text."""
        scenario = self._current or "—"
        done = f"{len(self._finished)}/{len(self._estimates)}"
        return (
            f"{scenario} ({done}) · {self._step} · elapsed {clock_text(self.elapsed_s())} · "
            f"~{clock_text(self.left_s())} left"
        )

    def renderable(self) -> RenderableType:
        elapsed, left = self.elapsed_s(), self.left_s()
        line = Table.grid(padding=(0, 1))
        line.add_row(
            ProgressBar(total=max(elapsed + left, 1e-9), completed=elapsed, width=24),
            self.status(),
        )
        return line
