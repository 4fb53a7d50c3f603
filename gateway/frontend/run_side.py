"""A front end's picture of the workers, kept from the supervisor's messages, and its hang watch.

The supervisor hands each front end a channel of its own to every worker (``worker``: index,
pid, the servables routed there, and the channel's four descriptors) and tells it of routes
(``route`` / ``unroute``) and deaths (``worker_gone``); :class:`RunSide` applies them to the
front end's :class:`~gateway.runs.shared_load.SharedLoadDispatcher`, which routes the
runs. A worker's death fails this front end's runs on it with UNAVAILABLE at once.

Hung runs are noticed here, where the runs are: every ``check_s`` the dispatcher names the
workers whose current run computed past :mod:`gateway.worker_channel.watchdog`'s limit; their runs
fail with that message and the supervisor is asked to retire the worker (``retire``), which it
kills and replaces, as in one process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from channel.handover import close_all
from channel.shm.channel import Channel
from gateway.errors import Unavailable
from gateway.runs.shared_load import SharedLoadDispatcher
from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_channel.watchdog import HangPolicy

log = logging.getLogger(__name__)

Retire = Callable[[int, int, str], None]
"""Asks the supervisor to retire worker (index, pid) for the reason given."""


class RunSide:
    """The worker channels of one front end, on ``dispatcher``; ``on_change`` runs when what is
    routable changes (health)."""

    def __init__(self, dispatcher: SharedLoadDispatcher, on_change: Callable[[], None]) -> None:
        self.dispatcher = dispatcher
        self._on_change = on_change
        self._endpoints: dict[int, tuple[int, Endpoint]] = {}
        """Worker index → (its pid, this front end's endpoint on it)."""

    def worker(self, index: int, pid: int, routed: list[str], fds: list[int]) -> None:
        """A channel to worker ``index`` (a new or a replaced process)."""
        if len(fds) != 4:
            close_all(fds)
            log.error("a channel to worker %d came with %d descriptors", index, len(fds))
            return
        memfd, submit_fd, complete_fd, release_fd = fds
        channel = Channel(
            index=index,
            memfd=memfd,
            submit_fd=submit_fd,
            complete_fd=complete_fd,
            release_fd=release_fd,
        )
        old = self._endpoints.pop(index, None)
        if old is not None:
            old[1].close(Unavailable(f"worker {index} was replaced"))
        endpoint = Endpoint(index, channel, asyncio.get_running_loop())
        endpoint.open()
        link = self.dispatcher.attach(endpoint)
        link.routed.update(routed)
        self._endpoints[index] = (pid, endpoint)
        self.dispatcher.wake()
        self._on_change()

    def gone(self, index: int, pid: int, message: str) -> None:
        """Worker ``index`` (``pid``) died: fail this front end's runs there with ``message``."""
        current = self._endpoints.get(index)
        if current is not None and current[0] == pid:
            del self._endpoints[index]
            current[1].close(Unavailable(message))
            self._on_change()

    def route(self, index: int, key: str) -> None:
        self.dispatcher.route(index, key)
        self._on_change()

    def unroute(self, index: int, key: str) -> None:
        self.dispatcher.unroute(index, key)
        self._on_change()

    async def watch_hangs(self, policy: HangPolicy, retire: Retire) -> None:
        """Every ``policy.check_s``: fail the runs of a worker whose current run is hung, and ask
        for it to be retired. Runs until cancelled."""
        while True:
            await asyncio.sleep(policy.check_s)
            for index, message in self.dispatcher.hung(policy, time.monotonic()):
                current = self._endpoints.get(index)
                if current is None:
                    continue
                pid, endpoint = current
                log.error("%s (pid %d); asking the supervisor to replace it", message, pid)
                endpoint.close(Unavailable(message))
                retire(index, pid, message)

    def close(self) -> None:
        """Close every channel (the front end stops)."""
        for _, endpoint in self._endpoints.values():
            endpoint.close(Unavailable("the server is shutting down"))
        self._endpoints.clear()
