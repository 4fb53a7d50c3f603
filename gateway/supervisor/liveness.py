"""Noticing a front end that is alive but stuck (SIGSTOPped, a blocked loop), and replacing it.

A front end's event loop is held only briefly (a model run in the front end for about a
millisecond, stopped at 50 ms), so it answers a ``ping`` over its link within far less than
``timeout_s``. Every ``interval_s`` the supervisor pings each joined front end; one
that has not answered within ``timeout_s`` is dead to it: SIGKILLed (its connections fail, as a
SIGKILL's do, and the kernel stops handing it new ones), and its exit is then handled as any front
end's death — replaced at once.

This is also the one bound on every supervisor wait for a front end's acknowledgement (a
registry snapshot, a drain before an unload, a metrics scrape): such a wait ends when the front
end answers or, once it is killed, when its link closes (:mod:`gateway.ipc.link` fails the
calls waiting). So a stopped front end is killed within ``interval_s + timeout_s``
(``--frontend_ping_interval_seconds`` + ``--frontend_ping_timeout_seconds``, 15 s by default),
and a reload or unload through another front end waits on it no longer than that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gateway.pings import Pinger
from gateway.supervisor.frontends import FrontEndProcess
from gateway.tasks import Tasks


def front_end_pings(
    live: Callable[[], Iterable[FrontEndProcess]],
    *,
    interval_s: float,
    timeout_s: float,
    tasks: Tasks,
) -> Pinger[FrontEndProcess]:
    """Pings the front ends ``live()`` returns (those still alive) and kills those that do not
    answer in time (:class:`~gateway.pings.Pinger`: one ping outstanding each, in ``tasks``)."""
    return Pinger(
        lambda: [front for front in live() if front.alive],
        ping=lambda front: front.link.call("ping"),
        kill=lambda front: front.kill(),
        name=lambda front: f"front end {front.slot} (pid {front.pid})",
        interval_s=interval_s,
        timeout_s=timeout_s,
        tasks=tasks,
        what="front-end pings",
    )
