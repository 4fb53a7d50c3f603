"""A worker serving several channels: its supervisor's and one per front end.

With several front-end processes (``tensorgate --frontends N``) each front end has a channel of
its own to every worker, handed over at run time (:mod:`workers.channel_set`). The loop is
:func:`workers.worker.serve`'s over all of them: one :class:`~workers.worker.Worker` (one set of
loaded models) answers every request on the channel it came in on, one at a time; each wait's
requests are taken round-robin across channels, one from each in turn, so every front end and
the supervisor's control requests get their share. ``stop`` (on the supervisor's channel) or
SIGTERM ends the loop as in the one-channel loop: the request in hand is answered, every other
waiting request on every channel is answered UNAVAILABLE, and the loop returns 0.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterator
from typing import TypeVar

from channel import messages
from channel.messages import BadRequest, Request
from channel.shm.channel import Channel
from workers.channel_set import ChannelSet
from workers.worker import Worker, _decode, _post, _refuse

log = logging.getLogger(__name__)

C = TypeVar("C")


def round_robin(ready: list[tuple[C, list[bytes]]]) -> Iterator[tuple[C, bytes]]:
    """Each channel's requests in order, interleaved: the first of each channel, then the
    second of each, and so on."""
    queues = [(channel, iter(requests)) for channel, requests in ready]
    while queues:
        still = []
        for channel, requests in queues:
            data = next(requests, None)
            if data is not None:
                yield channel, data
                still.append((channel, requests))
        queues = still


def serve(
    primary: Channel,
    handover_sock: socket.socket,
    stopping: Callable[[], bool],
    wake_fd: int | None = None,
) -> int:
    """Announce readiness on ``primary``, then serve it and every channel handed over on
    ``handover_sock`` until ``stop`` or ``stopping()``; returns the exit status (0)."""
    worker = Worker(primary)
    channels = ChannelSet(primary, handover_sock, wake_fd)
    _post(primary, messages.ready(os.getpid()))
    try:
        while True:
            ready = channels.wait()
            if ready.slept and ready.requests:
                worker.telemetry.count_wakeup()
            taken = round_robin(ready.requests)
            for channel, data in taken:
                request = _decode(data)
                if _answer(worker, channel, request) or stopping():
                    _refuse_rest(channel, taken, channels)
                    return 0
            if stopping():
                _refuse_rest(primary, iter(()), channels)
                return 0
    finally:
        channels.close()


def _answer(worker: Worker, channel: Channel, request: Request | BadRequest) -> bool:
    """Answer one request on its channel; True when it was ``stop``."""
    if isinstance(request, BadRequest):
        _post(channel, request.reply(request.request_id))
        return False
    worker.channel = channel  # a run's tensors are in the areas of the channel it came on
    reply = worker.handle(request)
    if request["op"] == "run":
        worker.telemetry.count_run(reply["ok"])
    _post(channel, reply)
    return request["op"] == "stop"


def _refuse_rest(
    last: Channel, taken: Iterator[tuple[Channel, bytes]], channels: ChannelSet
) -> None:
    """Answer UNAVAILABLE to what this wait took and did not answer, then to what waits."""
    for channel, data in taken:
        _refuse(channel, [_decode(data)])
    for channel, requests in channels.pending():
        _refuse(channel, [_decode(data) for data in requests])
    log.info("worker %d stopping", last.index)
