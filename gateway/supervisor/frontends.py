"""The front-end processes as the supervisor holds them: spawn, watch, link.

Each front end is a fresh interpreter (``python -m gateway.frontend``, never a fork: grpc is
imported here) started with the supervisor's own command-line flags, a Unix socket to the
supervisor (its :class:`~gateway.ipc.link.MessageLink`), the shared load table's memfd and its
slot. It dies with the supervisor (``PR_SET_PDEATHSIG``, as workers do: :mod:`gateway.frontend.
bootstrap`), so spawn from the event loop's thread. Its death is noticed through a pidfd the loop
watches. Each start gets a new ``serial`` (the worker channels it owns are named by it), while the
``slot`` (its row in the load table) stays with the replacement.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence

from gateway.ipc.link import MessageHandler, MessageLink

log = logging.getLogger(__name__)


class FrontEndProcess:
    """A started front end: its process, its link, and whether it has said hello."""

    def __init__(
        self,
        slot: int,
        serial: int,
        process: subprocess.Popen[bytes],
        sock: socket.socket,
        handler: Callable[[FrontEndProcess], MessageHandler],
    ) -> None:
        self.slot = slot
        self.serial = serial
        self.process = process
        self.link = MessageLink(sock, handler(self), name=f"front end {slot}")
        loop = asyncio.get_running_loop()
        self.joined: asyncio.Future[None] = loop.create_future()
        """Resolves once it said hello and has the channels, routes and registry."""
        self.serving = False
        """True once its servers listen."""
        self.exited: asyncio.Future[int] = loop.create_future()
        self._pidfd = os.pidfd_open(process.pid)

    @classmethod
    def spawn(
        cls,
        slot: int,
        serial: int,
        *,
        flags: Sequence[str],
        load_table_fd: int,
        frontends: int,
        workers: int,
        handler: Callable[[FrontEndProcess], MessageHandler],
        on_exit: Callable[[FrontEndProcess], None],
    ) -> FrontEndProcess:
        """Start front end ``slot`` (start number ``serial``) with the supervisor's ``flags``;
        ``handler(front_end)`` answers its messages, ``on_exit`` runs on the loop when it ends."""
        ours, theirs = socket.socketpair()
        argv = [
            *(sys.executable, "-m", "gateway.frontend"),
            *("--slot", str(slot), "--serial", str(serial)),
            *("--control-fd", str(theirs.fileno()), "--load-table-fd", str(load_table_fd)),
            *("--frontends", str(frontends), "--workers", str(workers)),
            *("--parent-pid", str(os.getpid()), "--", *flags),
        ]
        try:
            process = subprocess.Popen(
                argv, pass_fds=(theirs.fileno(), load_table_fd), stdin=subprocess.DEVNULL
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        front = cls(slot, serial, process, ours, handler)
        asyncio.get_running_loop().add_reader(front._pidfd, front._ended, on_exit)
        return front

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return not self.exited.done()

    def _ended(self, on_exit: Callable[[FrontEndProcess], None]) -> None:
        asyncio.get_running_loop().remove_reader(self._pidfd)
        os.close(self._pidfd)
        code = self.process.wait()
        self.link.close()
        if not self.exited.done():
            self.exited.set_result(code)
        on_exit(self)

    def kill(self) -> None:
        """SIGKILL the process (its exit is then handled as any other); nothing once reaped."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)

    async def stop(self, timeout_s: float) -> int:
        """Wait ``timeout_s`` for it to exit (it was asked to drain), then kill it; its code."""
        try:
            return await asyncio.wait_for(asyncio.shield(self.exited), timeout_s)
        except TimeoutError:
            log.warning("front end %d (pid %d) did not stop; killing it", self.slot, self.pid)
            self.kill()
            return await self.exited
