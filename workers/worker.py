"""The worker's serving loop: every request on every channel it serves, one at a time, each answered
on the channel it came on.

A worker serves a set of channels (:mod:`workers.channel_set`): its supervisor's, and with several
front ends one per front end, handed over at run time; with one front end the set holds the one
channel. :func:`serve_channels` waits on all of them at once and takes each wait's requests
round-robin across channels (:func:`round_robin`), so every front end and the supervisor's control
requests get their share. Every request gets exactly one reply, success or failure (see
:mod:`channel.messages`); one that does not decode gets INVALID_ARGUMENT.

The loop ends on ``stop`` (reply, exit 0) or when ``stopping()`` turns true (SIGTERM): the request
in hand is finished and answered, every other waiting request on every channel is answered
UNAVAILABLE (:func:`_refuse`, the one place that refuses), and the loop returns 0.

:class:`Worker` handles each request over the models it holds (:mod:`workers.models`: loaders by
platform); a run's tensors go in and out of its channel's areas through :mod:`workers.tensors`.
A run goes from its binary descriptor to numpy views and back to a binary reply without any
intermediate object.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from channel import messages
from channel.messages import (
    BadRequest,
    ErrorReply,
    LoadRequest,
    PingRequest,
    Reply,
    RunReply,
    RunRequest,
    StopRequest,
    UnloadRequest,
    WorkerError,
)
from channel.shm.channel import Channel
from channel.shm.ring import ChannelFull
from channel.span_wire import SpanForm
from channel.telemetry import Telemetry
from workers.channel_set import ChannelSet
from workers.models import Model, loader_for
from workers.tensors import read_inputs, write_outputs

log = logging.getLogger(__name__)

_POST_WAIT_S = 30.0
"""How long a reply waits for a free completion slot before the worker gives up (the gateway
caps in-flight work below the ring size, so waiting at all means it is stuck)."""

_SHUTTING_DOWN = WorkerError("UNAVAILABLE", "worker is shutting down")

ControlRequest = LoadRequest | UnloadRequest | PingRequest | StopRequest
"""Every request but a run."""


class Worker:
    """The models loaded in this process and the handler of each request.

    ``output_capacity`` is the bytes one run's outputs may take (every channel's output area is
    that large). ``load`` of a key already loaded from the same path answers with its signature
    without reloading; from another path it replaces the model.
    """

    def __init__(self, output_capacity: int) -> None:
        self.output_capacity = output_capacity
        self.models: dict[str, Model] = {}
        self.runs: dict[str, int] = {}
        """Runs per loaded key since its load (``ping`` with a key reports them)."""
        self.compute_spans: dict[str, SpanForm] = {}
        """The form of a traced run's ``compute`` span, per loaded key."""
        self.telemetry = Telemetry()

    def answer(self, channel: Channel, data: bytes) -> bool:
        """Decode the request in ``data``, handle it and post the reply on ``channel`` (the one
        it came on: a run's tensors are in its areas); True when it was ``stop``."""
        try:
            request = messages.decode_request(data)
        except BadRequest as exc:
            post_reply(channel, exc.reply(exc.request_id))
            return False
        if isinstance(request, RunRequest):
            reply = self.run(channel, request)
            self.telemetry.count_run(isinstance(reply, RunReply))
            post_reply(channel, reply)
            return False
        post_reply(channel, self.control(request))
        return request["op"] == "stop"

    def run(self, channel: Channel, run: RunRequest) -> RunReply | ErrorReply:
        """The reply to a run that came on ``channel``; never raises for a bad request or a
        failed run. Every reply, a failed run's too, carries ``out_end``: releasing it frees
        this run's output space (if it got any) and that of every earlier run."""
        try:
            return self._run(channel, run)
        except Exception as exc:
            error = _worker_error(exc, "run", run.id)
        try:
            return error.reply(run.id, out_end=channel.output_allocated)
        finally:
            # The failed run's frames (its outputs included) hang off the error's traceback in a
            # cycle through this frame, which a steady loop seldom collects: break it here.
            del error

    def control(self, request: ControlRequest) -> Reply:
        """The reply to a control request (load, unload, ping, stop); never raises."""
        request_id = request["id"]
        try:
            if request["op"] == "load":
                return messages.load_reply(request_id, self._load(request))
            if request["op"] == "unload":
                self._unload(request["key"])
                return messages.ok_reply(request_id)
            if request["op"] == "ping":
                key = request.get("key")
                runs = None if key is None else self.runs.get(key, 0)
                return messages.ping_reply(
                    request_id, os.getpid(), runs=runs, stats=self.telemetry.stats()
                )
            return messages.ok_reply(request_id)  # stop: the loop ends after replying
        except Exception as exc:
            error = _worker_error(exc, request["op"], request_id)
        try:
            return error.reply(request_id)
        finally:
            del error

    def _load(self, request: LoadRequest) -> Mapping[str, Any]:
        key, path = request["key"], request["path"]
        loaded = self.models.get(key)
        if loaded is not None and loaded.path == path:
            return loaded.signature
        loader = loader_for(request)
        started = time.perf_counter()
        model = loader(request, self.output_capacity)
        seconds = time.perf_counter() - started
        if loaded is not None:
            loaded.close()
        self.models[key] = model
        self.runs[key] = 0
        self.compute_spans[key] = SpanForm.of("compute", {"tensorgate.model": key})
        self.telemetry.loaded(key, seconds)
        log.info("loaded %s from %s in %.3f s", key, path, seconds)
        return model.signature

    def _unload(self, key: str) -> None:
        model = self.models.pop(key, None)
        self.runs.pop(key, None)
        self.compute_spans.pop(key, None)
        self.telemetry.unloaded(key)
        if model is not None:
            model.close()
            log.info("unloaded %s", key)

    def _run(self, channel: Channel, run: RunRequest) -> RunReply:
        request_id, key, inputs, outputs, deadline, signature, context = run
        if deadline is not None and time.monotonic() >= deadline:
            raise WorkerError("DEADLINE_EXCEEDED", "deadline exceeded before the batch ran")
        model = self.models.get(key)
        if model is None:
            raise WorkerError("NOT_FOUND", f"model {key!r} is not loaded in this worker")
        feeds = read_inputs(channel, inputs, model.text_strings)
        trace = None if context is None else self.telemetry.trace(context)
        started = time.perf_counter_ns()
        self.runs[key] += 1
        try:
            results = model.run(feeds, outputs, signature)
        except BaseException:
            if trace is not None:
                trace.abandon()
            raise
        compute_us = (time.perf_counter_ns() - started) / 1000
        spans = None if trace is None else trace.finish(self.compute_spans[key])
        del feeds
        descs = write_outputs(channel, results)
        values = (request_id, descs, channel.output_allocated, compute_us, spans)
        return tuple.__new__(RunReply, values)


def _worker_error(exc: Exception, op: str, request_id: int) -> WorkerError:
    """``exc`` as the worker reports it: itself when it is a WorkerError, else INTERNAL (logged
    with its traceback)."""
    if isinstance(exc, WorkerError):
        return exc
    log.exception("%s request %d failed", op, request_id)
    return WorkerError("INTERNAL", f"{type(exc).__name__}: {exc}")


def post_reply(channel: Channel, reply: Reply) -> None:
    """Post ``reply`` on ``channel``, waiting for a free slot; a reply too big for a slot becomes
    INTERNAL."""
    data = messages.encode(reply)
    try:
        channel.post_completion(data)
        return
    except ChannelFull:
        pass
    except ValueError as exc:
        data = _too_large(reply, exc)
    deadline = time.monotonic() + _POST_WAIT_S
    while True:
        try:
            channel.post_completion(data)
            return
        except ChannelFull:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.0005)
        except ValueError as exc:
            data = _too_large(reply, exc)


def _too_large(reply: Reply, exc: ValueError) -> bytes:
    """The INTERNAL error that replaces ``reply``, which does not fit a ring slot."""
    request_id = messages.reply_id(reply)
    log.error("reply to id %d does not fit a slot: %s", request_id, exc)
    out_end = reply.out_end if isinstance(reply, RunReply) else reply.get("out_end")
    error = messages.error_reply(
        request_id,
        "INTERNAL",
        f"reply too large: {exc}",
        out_end=out_end if isinstance(out_end, int) else None,
    )
    return messages.encode(error)


def round_robin(ready: list[tuple[Channel, list[bytes]]]) -> list[tuple[Channel, bytes]]:
    """Each channel's requests in order, interleaved: the first of each channel, then the
    second of each, and so on."""
    if len(ready) == 1:
        channel, requests = ready[0]
        return list(zip(itertools.repeat(channel), requests))
    taken: list[tuple[Channel, bytes]] = []
    for row in itertools.zip_longest(*(requests for _, requests in ready)):
        for (channel, _), data in zip(ready, row, strict=True):
            if data is not None:
                taken.append((channel, data))
    return taken


def serve_channels(channels: ChannelSet, stopping: Callable[[], bool]) -> int:
    """Announce readiness on the primary channel, then serve every channel of ``channels`` until
    ``stop`` or ``stopping()``; returns the exit status (0)."""
    primary = channels.primary
    worker = Worker(primary.output_capacity)
    post_reply(primary, messages.ready(os.getpid()))
    try:
        while True:
            arrivals = channels.wait()
            if arrivals.slept and arrivals.requests:
                worker.telemetry.count_wakeup()
            taken = round_robin(arrivals.requests)
            for i, (channel, data) in enumerate(taken):
                if worker.answer(channel, data) or stopping():
                    _refuse(taken[i + 1 :], channels)
                    return 0
            if stopping():
                _refuse([], channels)
                return 0
    finally:
        channels.close()


def _refuse(taken: list[tuple[Channel, bytes]], channels: ChannelSet) -> None:
    """Answer UNAVAILABLE to what the last wait took and was not answered, then to every request
    still waiting on any channel."""
    waiting = [(c, data) for c, requests in channels.pending() for data in requests]
    for channel, data in taken + waiting:
        try:
            request_id = messages.request_id(messages.decode_request(data))
        except BadRequest as exc:
            request_id = exc.request_id
        post_reply(channel, _SHUTTING_DOWN.reply(request_id))
    log.info("worker %d stopping", channels.primary.index)
