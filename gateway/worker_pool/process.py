"""One worker process as the supervisor holds it: the process, its channel's endpoint, its links.

Each worker is a fresh interpreter (``python -m workers``, never a fork of the gateway) attached
to its own :class:`~channel.shm.channel.Channel`. Its death is noticed through a pidfd the loop
watches: :meth:`WorkerProcess.reap` then fails everything its links await. The supervisor also
keeps here what it placed in the process (:attr:`~WorkerProcess.held`) and what of that it has
routed there (:attr:`~WorkerProcess.routed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
from collections.abc import Callable
from typing import Any

from channel.shm.channel import Channel
from gateway.errors import ServingError, Unavailable
from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_channel.run_link import RunLink
from gateway.worker_pool.control import ControlLink
from gateway.worker_pool.run_router import RunRouter
from workers.bootstrap import spawn_worker

log = logging.getLogger(__name__)


class WorkerProcess:
    """A started worker process and its links; ``exited`` resolves when the process is gone."""

    def __init__(
        self,
        endpoint: Endpoint,
        control: ControlLink,
        runs: RunLink,
        process: subprocess.Popen[bytes],
    ) -> None:
        self.endpoint = endpoint
        self.control = control
        self.runs = runs
        """The run link over the same channel: warmup's runs (and, today, the front end's)."""
        self.process = process
        self.index = endpoint.index
        self.held: set[str] = set()
        """Servables loaded in this process, warm or still warming."""
        self.routed: set[str] = set()
        """Servables whose runs are routed here (warm)."""
        self.handover: socket.socket | None = None
        """The supervisor's end of the socket on which channels are handed to the worker after
        it started (several front ends: :mod:`gateway.supervisor.fanout`, which closes it);
        None otherwise."""
        self.started = False
        """Set by the pool once the worker is alive with its servables: from then on its exit
        calls for a replacement (before, its start fails instead)."""
        loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[None] = loop.create_future()
        self._pidfd = os.pidfd_open(process.pid)

    @classmethod
    def spawn(
        cls,
        index: int,
        *,
        input_bytes: int,
        output_bytes: int,
        log_format: str,
        dispatcher: RunRouter,
        on_exit: Callable[[WorkerProcess], None],
        handover: bool = False,
    ) -> WorkerProcess:
        """Create worker ``index``'s channel and control link, then its process, and attach the
        channel to ``dispatcher`` (the run side); ``on_exit`` is called on the loop when the
        process ends. ``handover``: give the worker a Unix socket for channels made later
        (:attr:`handover`)."""
        loop = asyncio.get_running_loop()
        channel = Channel.create(index=index, input_bytes=input_bytes, output_bytes=output_bytes)
        endpoint = Endpoint(index, channel, loop)
        control = ControlLink(endpoint, loop)
        ours, theirs = socket.socketpair() if handover else (None, None)
        try:
            process = spawn_worker(
                channel,
                log_format=log_format,
                handover_fd=None if theirs is None else theirs.fileno(),
            )
        except BaseException:
            endpoint.close(Unavailable("worker failed to start"))
            if ours is not None:
                ours.close()
            raise
        finally:
            if theirs is not None:
                theirs.close()
        control.pid = process.pid
        worker = cls(endpoint, control, dispatcher.attach(endpoint), process)
        worker.handover = ours
        loop.add_reader(worker._pidfd, on_exit, worker)
        return worker

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.endpoint.alive

    def reap(self) -> int:
        """The process ended: stop watching it, fail what its links await, return its exit code."""
        asyncio.get_running_loop().remove_reader(self._pidfd)
        os.close(self._pidfd)
        code = self.process.wait()
        self.endpoint.close(Unavailable(f"worker {self.index} exited (code {code})"))
        if not self.exited.done():
            self.exited.set_result(None)
        return code

    def kill(self) -> None:
        """SIGKILL the process (its exit is then reaped as any other); nothing once reaped."""
        if self.process.returncode is not None:
            return  # reaped: the pid may be another process's by now
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)

    def retire(self, error: ServingError) -> None:
        """Fail what its links await with ``error``, then kill it (a hung worker)."""
        self.endpoint.close(error)
        self.kill()

    async def stop(self, timeout_s: float) -> None:
        """Ask a live worker to exit (kill one that is not), wait ``timeout_s``, then kill it."""
        if self.alive:
            with contextlib.suppress(ServingError):
                self.control.stop().add_done_callback(_ignore)
        else:
            self.kill()
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), timeout_s)
        except TimeoutError:
            log.warning("worker %d (pid %d) did not stop; killing it", self.index, self.pid)
            self.kill()
            await self.exited


def _ignore(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
