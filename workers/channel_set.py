"""Every channel a worker serves, watched with one wait.

A worker has its supervisor's channel (control: load, unload, ping, stop, warmup runs; with one
front end, every run too) and, with several front ends, one channel per front end (runs), the
latter handed over at run time on the worker's handover socket (:mod:`channel.handover`):
``{"op": "attach", "owner": N}`` with the channel's four descriptors (a front end started, or
this worker replaced one), ``{"op": "detach", "owner": N}`` (front end ``N`` is gone: its
channel is closed; what it still had in flight completes into nothing).

:meth:`ChannelSet.wait` is the need-wakeup handshake of :mod:`channel.shm.doorbell` over all of
them at once: announce sleep on every channel, fence, re-check every ring, and only then ``poll``
every submit doorbell, the handover socket and the signal wake-up descriptor together. It returns
each channel's waiting requests (the serving loop, :mod:`workers.worker`, takes them
round-robin), so a busy front end cannot starve the others or the supervisor's control requests.
A worker without a handover socket serves its one channel the same way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
from typing import NamedTuple

from channel import handover
from channel.shm.channel import Channel
from channel.shm.doorbell import fence

log = logging.getLogger(__name__)


class Arrivals(NamedTuple):
    """What one wait found: each channel's requests (non-empty lists only) and whether a signal
    arrived."""

    requests: list[tuple[Channel, list[bytes]]]
    woken: bool = False
    handed_over: bool = False
    """Whether handover messages were applied (channels attached or detached)."""
    slept: bool = False
    """Whether the wait found nothing at first look and announced sleep (the gateway rings a
    channel's submit doorbell only then): with requests, one wake-up of the worker."""


class ChannelSet:
    """The ``primary`` channel (never detached) and the attached ones, by owner."""

    def __init__(
        self, primary: Channel, handover_sock: socket.socket | None, wake_fd: int | None
    ) -> None:
        self.primary = primary
        self._owned: dict[int, Channel] = {}
        self._all = [primary]
        """:attr:`channels`, kept as they are attached and detached (a wait reads it)."""
        self._by_fd: dict[int, Channel] = {primary.submit_fd: primary}
        self._poll = select.poll()
        self._poll.register(primary.submit_fd, select.POLLIN)
        self._sock = handover_sock
        self._decoder = handover.Decoder()
        if handover_sock is not None:
            handover_sock.setblocking(False)
            self._poll.register(handover_sock.fileno(), select.POLLIN)
        self._wake_fd = wake_fd
        if wake_fd is not None:
            self._poll.register(wake_fd, select.POLLIN)

    @property
    def channels(self) -> list[Channel]:
        """The primary channel first, then the attached ones in attach order."""
        return list(self._all)

    def attach(self, owner: int, channel: Channel) -> None:
        """Serve ``channel`` for ``owner`` (replacing, and closing, one it had)."""
        self.detach(owner)
        self._owned[owner] = channel
        self._all = [self.primary, *self._owned.values()]
        self._by_fd[channel.submit_fd] = channel
        self._poll.register(channel.submit_fd, select.POLLIN)
        log.debug("attached the channel of front end %d", owner)

    def detach(self, owner: int) -> None:
        """Stop serving ``owner``'s channel and close it (nothing when it has none)."""
        channel = self._owned.pop(owner, None)
        if channel is None:
            return
        self._all = [self.primary, *self._owned.values()]
        self._poll.unregister(channel.submit_fd)
        del self._by_fd[channel.submit_fd]
        channel.close()
        log.debug("detached the channel of front end %d", owner)

    def close(self) -> None:
        """Close every attached channel (not the primary) and what the handover left."""
        for owner in list(self._owned):
            self.detach(owner)
        self._decoder.close()

    def pending(self) -> list[tuple[Channel, list[bytes]]]:
        """Every channel's waiting requests, without waiting."""
        found = []
        for channel in self._all:
            requests = channel.take_submissions()
            if requests:
                found.append((channel, requests))
        return found

    def wait(self) -> Arrivals:
        """Wait until some channel has requests, a signal arrives or handover messages were
        applied (these first: a channel attached now is served from this wait on). Once per
        wake-up of a busy worker: its values are made with ``tuple.__new__`` (no Python code)."""
        found = self.pending()
        if found:
            return tuple.__new__(Arrivals, (found, False, False, False))
        while True:
            channels = self._all
            for channel in channels:
                channel.announce_sleep(True)
            fence()
            found = self.pending()  # pushed before a gateway could see its word
            if found:
                for channel in channels:
                    channel.announce_sleep(False)
                return tuple.__new__(Arrivals, (found, False, False, True))
            events = self._poll.poll()
            for channel in channels:
                channel.announce_sleep(False)
            woken = handed_over = False
            for fd, _ in events:
                if fd == self._wake_fd:
                    with contextlib.suppress(BlockingIOError):
                        os.read(fd, 4096)
                    woken = True
                elif self._sock is not None and fd == self._sock.fileno():
                    handed_over = True
                    self._take_handover()
                elif fd in self._by_fd:
                    try:  # noqa: SIM105 (contextlib.suppress: three Python calls per wake-up)
                        os.eventfd_read(fd)
                    except BlockingIOError:
                        pass
            found = self.pending()
            if found or woken or handed_over:
                return tuple.__new__(Arrivals, (found, woken, handed_over, True))

    def _take_handover(self) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            more = handover.receive(sock, self._decoder)
        except BlockingIOError:
            return
        except (OSError, handover.HandoverError) as exc:
            log.error("handover socket failed (no new channels from now on): %s", exc)
            more = False
        if not more:  # the supervisor is gone; PR_SET_PDEATHSIG ends this process
            self._poll.unregister(sock.fileno())
            self._sock = None
            return
        for message, fds in self._decoder.frames():
            self._apply(message, fds)

    def _apply(self, message: handover.Message, fds: list[int]) -> None:
        op, owner = message.get("op"), message.get("owner")
        if op == "attach" and isinstance(owner, int) and len(fds) == 4:
            memfd, submit_fd, complete_fd, release_fd = fds
            try:
                channel = Channel(
                    index=self.primary.index,
                    memfd=memfd,
                    submit_fd=submit_fd,
                    complete_fd=complete_fd,
                    release_fd=release_fd,
                )
            except (OSError, ValueError) as exc:
                log.error("channel of front end %d refused: %s", owner, exc)
                handover.close_all(fds)
                return
            self.attach(owner, channel)
        elif op == "detach" and isinstance(owner, int):
            handover.close_all(fds)
            self.detach(owner)
        else:
            log.error("unknown handover message %r with %d descriptors", message, len(fds))
            handover.close_all(fds)
