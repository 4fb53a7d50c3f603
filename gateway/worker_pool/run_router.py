"""What the worker pool tells a run side of its workers, and asks of it: the one seam between
the supervisor's room and a front end's.

The pool owns the worker processes; the runs over their channels belong to a run side: a front
end's :class:`~gateway.runs.dispatcher.Dispatcher` in one process, or the supervisor's
:class:`~gateway.supervisor.fanout.Fanout` with several front ends (it carries the warmup runs
and passes every call on to each front end). :class:`RunRouter` is all that the pool and its
parts ask of it, so nothing in :mod:`gateway.worker_pool` imports :mod:`gateway.runs`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_channel.run_link import RunLink
from gateway.worker_channel.watchdog import HangPolicy


class RunRouter(Protocol):
    """The run side the pool reports its workers to."""

    def attach(self, endpoint: Endpoint) -> RunLink:
        """A worker's channel is up: the run link over it (warmup runs go over it; no servable
        is routed to it yet)."""
        ...

    def route(self, index: int, key: str) -> None:
        """Worker ``index`` holds ``key`` warm: send it ``key``'s runs from now on."""
        ...

    def unroute(self, index: int, key: str) -> None:
        """Send ``key``'s runs to worker ``index`` no more (those in flight finish)."""
        ...

    def hung(self, policy: HangPolicy, now: float) -> list[tuple[int, str]]:
        """The live workers whose current run computed past ``policy``'s limit at ``now``
        (``time.monotonic()`` seconds), each with the message its runs should fail with."""
        ...

    def on_capacity(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once, the next time a run finishes (a slot or input room may have
        freed)."""
        ...

    def wake(self) -> None:
        """A worker came up: whoever waits for capacity looks again."""
        ...
