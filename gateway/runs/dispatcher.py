"""A front end's run side: its run link to each worker, least-loaded routing, capacity callbacks.

The worker pool (:mod:`gateway.worker_pool.pool`) or, with several front ends, the supervisor's
messages (:mod:`gateway.frontend.run_side`) tell the run side what it must know: a worker's
channel is up (:meth:`Dispatcher.attach`, which makes the
:class:`~gateway.worker_channel.run_link.RunLink` over it), a servable is warm on a worker and may
be routed there (:meth:`~Dispatcher.route`) or may not any more (:meth:`~Dispatcher.unroute`); and
it is asked which runs look hung (:meth:`~Dispatcher.hung`).

Routing is least-loaded with a per-worker cap: at most ``max_in_flight`` runs are outstanding per
worker (one computing, the rest queued in its ring, so the worker never idles between runs).
Queuing beyond that is the batch schedulers': :meth:`~Dispatcher.pick` answers None when every
worker is at the cap, or kept for a sender that waits for input room ahead of the caller
(:mod:`gateway.runs.input_room`, :attr:`Dispatcher.room`); a scheduler registers with
:meth:`~Dispatcher.on_capacity` to be called back (once, in registration order) when a slot frees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from gateway.errors import Unavailable
from gateway.runs.batch_runner import BatchRunner
from gateway.runs.inline_cost import HOP_S
from gateway.runs.input_room import InputRoom
from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_channel.run_link import RunLink
from gateway.worker_channel.watchdog import HangPolicy, RunTimes, hung_run


class Dispatcher:
    """Routes runs to the least-loaded live worker hosting a servable."""

    def __init__(self, *, max_in_flight: int = 2) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.links: list[RunLink] = []
        self.max_in_flight = max_in_flight
        self.run_times = RunTimes()
        """Compute times per servable, for hung-run detection (each link records into it)."""
        self._listeners: dict[Callable[[], None], None] = {}
        self.room = InputRoom(self.on_capacity, self.wake)
        """The senders waiting for room in a worker's input area, and the workers kept for them."""

    def hop_s(self) -> float:
        """The worker hop's measured wall time per run (seconds; the links' moving average of a
        reply's time less its compute, for runs sent to an idle worker), or
        :data:`~gateway.runs.inline_cost.HOP_S` before any."""
        measured = [link.hop_s for link in self.links if link.hop_s is not None]
        return sum(measured) / len(measured) if measured else HOP_S

    # -- what the supervisor tells the run side -------------------------------------------------
    def attach(self, endpoint: Endpoint) -> RunLink:
        """A worker's channel is up: the run link over it, replacing a retired link of the same
        worker; no servable is routed to it yet."""
        link = RunLink(
            endpoint,
            asyncio.get_running_loop(),
            on_run_done=self.wake,
            run_times=self.run_times,
        )
        self.add_link(link)
        return link

    def add_link(self, link: RunLink) -> None:
        """Route to ``link`` (replacing a retired link of the same index); the link calls
        :meth:`wake` when a run finishes (its ``on_run_done``)."""
        self.links = [x for x in self.links if x.index != link.index] + [link]
        self.links.sort(key=lambda x: x.index)

    def route(self, index: int, key: str) -> None:
        """Worker ``index`` holds ``key`` warm: send it ``key``'s runs from now on."""
        for link in self.links:
            if link.index == index:
                link.routed.add(key)
        self.wake()

    def unroute(self, index: int, key: str) -> None:
        """Send ``key``'s runs to worker ``index`` no more (those in flight finish)."""
        for link in self.links:
            if link.index == index:
                link.routed.discard(key)

    def hung(self, policy: HangPolicy, now: float) -> list[tuple[int, str]]:
        """The live workers whose current run has computed past ``policy``'s limit at ``now``
        (``time.monotonic()`` seconds), each with the message its runs should fail with."""
        found = []
        for link in self.links:
            run = link.oldest_run() if link.alive else None
            if run is None:
                continue
            key, rows, since = run
            limit = hung_run(policy, self.run_times, key, rows, now - since)
            if limit is not None:
                found.append(
                    (
                        link.index,
                        f"worker {link.index} stopped answering: a run of {key} ({rows} rows) "
                        f"computed for over {limit:.1f} s",
                    )
                )
        return found

    # -- routing --------------------------------------------------------------------------------
    def pick(self, key: str, sender: object = None) -> BatchRunner | None:
        """Where ``sender``'s next batch of ``key`` runs: the run link of the least-loaded live
        worker hosting ``key`` with a free slot, or None if all are busy or kept for senders
        waiting for input room ahead of ``sender``.

        Raises Unavailable when no live worker hosts ``key`` at all.
        """
        candidates = [link for link in self.links if link.alive and key in link.routed]
        if not candidates:
            raise Unavailable(f"no worker is serving {key} right now; retry later")
        kept = self.room.kept_before(sender)
        if kept:
            candidates = [link for link in candidates if not link.routed & kept]
            if not candidates:
                return None
        return self._choose(candidates)

    def _choose(self, candidates: list[RunLink]) -> RunLink | None:
        """Among live, unkept ``candidates`` (not empty): the one with the fewest runs in flight,
        if it has a free slot."""
        best = min(candidates, key=lambda link: link.runs_in_flight)
        return best if best.runs_in_flight < self.max_in_flight else None

    def on_capacity(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once, the next time a slot may have freed (idempotent per listener)."""
        self._listeners[listener] = None

    def wake(self) -> None:
        """A run finished or a worker came up: call every registered listener once, in order."""
        listeners, self._listeners = self._listeners, {}
        for listener in listeners:
            listener()
