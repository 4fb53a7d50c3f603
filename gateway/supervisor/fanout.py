"""What every front end must know of the workers: their channels, their routes, their deaths.

The supervisor's pool tells its run side what happens to the workers (a worker is up, a servable
is routed to it or not any more; :class:`~gateway.runs.dispatcher.Dispatcher`'s calls, and
:class:`~gateway.worker_pool.pool.WorkerEvents`). :class:`Fanout` is that run side: it keeps its own
run links (the supervisor's warmup runs) and passes each event on to every front end that has
joined:

- a worker is up (or a front end joins while it is): a new channel for that (front end, worker)
  pair — an anonymous memfd and three eventfds, made here and never mapped here — goes to the
  worker over its handover socket (``attach``, owner = the front end's serial) and to the front
  end (``worker``: index, pid, the servables routed there, and the same descriptors);
- ``route`` / ``unroute`` (index, key) as the pool routes;
- a worker died: ``worker_gone`` (index, pid, why), so that front end's runs on it fail with
  UNAVAILABLE at once (the reason a front end gave for a hung worker it asked to retire, or the
  exit code);
- a front end is gone: its channels are detached from every worker (what it had in flight
  completes into nothing) and its row of the load table is zeroed.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from channel.shm.segment import create_memfd
from gateway.errors import Unavailable
from gateway.ipc.link import MessageLink
from gateway.runs.dispatcher import Dispatcher
from gateway.runs.shared_load import LoadTable
from gateway.supervisor.frontends import FrontEndProcess
from gateway.worker_pool.process import WorkerProcess

log = logging.getLogger(__name__)


def channel_fds(index: int, input_bytes: int, output_bytes: int) -> list[int]:
    """A fresh channel's descriptors ``[memfd, submit, complete, release]`` (the caller owns
    them), laid out as :meth:`channel.shm.channel.Channel.create` lays one out."""
    fds = [create_memfd(f"tensorgate-w{index}", input_bytes, output_bytes, 64, 16384)]
    try:
        for _ in range(3):
            fds.append(os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


class Fanout(Dispatcher):
    """The supervisor's run side, passing worker events on to the joined front ends.

    ``input_bytes`` / ``output_bytes``: each channel's areas (``--worker_arena_mb``).
    ``table``: the load table (a departed front end's row is zeroed).
    """

    def __init__(self, *, input_bytes: int, output_bytes: int, table: LoadTable) -> None:
        super().__init__()
        self.input_bytes = input_bytes
        self.output_bytes = output_bytes
        self.table = table
        self.front_ends: dict[int, FrontEndProcess] = {}
        """Joined front ends, by slot."""
        self._workers: dict[int, tuple[WorkerProcess, MessageLink]] = {}
        self._retired: dict[int, str] = {}
        """Worker pid → why a front end asked to retire it."""

    # -- the pool's routes ------------------------------------------------------------------------
    def route(self, index: int, key: str) -> None:
        super().route(index, key)
        self._broadcast("route", index=index, key=key)

    def unroute(self, index: int, key: str) -> None:
        super().unroute(index, key)
        self._broadcast("unroute", index=index, key=key)

    def _broadcast(self, op: str, **fields: Any) -> None:
        for front in self.front_ends.values():
            front.link.notify(op, **fields)

    # -- the pool's WorkerEvents ------------------------------------------------------------------
    def started(self, worker: WorkerProcess) -> None:
        """A worker is ready: a channel to it for every joined front end."""
        sock, worker.handover = worker.handover, None
        if sock is None:
            raise RuntimeError(f"worker {worker.index} was started without a handover socket")
        link = MessageLink(sock, name=f"worker {worker.index}")
        self._workers[worker.index] = (worker, link)
        for front in self.front_ends.values():
            self._give(front, worker, link)

    def exited(self, worker: WorkerProcess, code: int) -> None:
        """A worker ended: every front end fails its runs there."""
        current = self._workers.get(worker.index)
        if current is not None and current[0] is worker:
            del self._workers[worker.index]
            current[1].close()
        if worker.handover is not None:  # it never became ready
            worker.handover.close()
            worker.handover = None
        why = self._retired.pop(worker.pid, f"worker {worker.index} exited (code {code})")
        self._broadcast("worker_gone", index=worker.index, pid=worker.pid, message=why)

    def retire(self, index: int, pid: int, message: str) -> None:
        """A front end found a run on worker ``index`` hung: kill it (if it is still ``pid``)."""
        current = self._workers.get(index)
        if current is None or current[0].pid != pid or not current[0].alive:
            return
        log.error("%s (pid %d); killing it", message, pid)
        self._retired[pid] = message
        current[0].retire(Unavailable(message))

    # -- front ends -------------------------------------------------------------------------------
    def join(self, front: FrontEndProcess) -> None:
        """``front`` said hello: a channel to every live worker, with its routes."""
        self.front_ends[front.slot] = front
        for worker, link in self._workers.values():
            if worker.alive:
                self._give(front, worker, link)

    def leave(self, front: FrontEndProcess) -> None:
        """``front`` is gone: detach its channels from every worker, zero its load."""
        if self.front_ends.get(front.slot) is front:
            del self.front_ends[front.slot]
        for _, link in self._workers.values():
            link.notify("detach", owner=front.serial)
        self.table.clear_row(front.slot)

    def _give(self, front: FrontEndProcess, worker: WorkerProcess, link: MessageLink) -> None:
        fds = channel_fds(worker.index, self.input_bytes, self.output_bytes)
        copies = [os.dup(fd) for fd in fds]
        link.notify("attach", fds=copies, owner=front.serial)
        front.link.notify(
            "worker",
            fds=fds,
            index=worker.index,
            pid=worker.pid,
            routed=sorted(worker.routed),
        )

    def close(self) -> None:
        """Close every worker's handover link (the pool has stopped them)."""
        for _, link in self._workers.values():
            link.close()
        self._workers.clear()
