"""The worker's serving loop: requests off the channel one at a time, in order, each answered.

Every request gets exactly one reply, success or failure (see :mod:`channel.messages`); one that
does not decode gets INVALID_ARGUMENT. The loop ends on ``stop`` (reply, exit 0) or when
``stopping()`` turns true (SIGTERM): the request in hand is finished and answered, every one
still queued is answered UNAVAILABLE, and the loop returns 0.

:class:`Worker` handles each request over the models it holds (:mod:`workers.models`: loaders by
platform); a run's tensors go in and out of the channel's areas through :mod:`workers.tensors`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from channel import messages
from channel.messages import (
    BadRequest,
    LoadRequest,
    Reply,
    Request,
    RunReply,
    RunRequest,
    WorkerError,
)
from channel.shm.channel import Channel
from channel.shm.ring import ChannelFull
from channel.span_wire import SpanForm
from channel.telemetry import Telemetry
from workers.models import Model, loader_for
from workers.tensors import read_input, write_outputs

log = logging.getLogger(__name__)

_POST_WAIT_S = 30.0
"""How long a reply waits for a free completion slot before the worker gives up (the gateway
caps in-flight work below the ring size, so waiting at all means it is stuck)."""


class Worker:
    """The models loaded in this process and the handler of each request.

    ``load`` of a key already loaded from the same path answers with its signature without
    reloading; from another path it replaces the model.
    """

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.models: dict[str, Model] = {}
        self.runs: dict[str, int] = {}
        """Runs per loaded key since its load (``ping`` with a key reports them)."""
        self.compute_spans: dict[str, SpanForm] = {}
        """The form of a traced run's ``compute`` span, per loaded key."""
        self.telemetry = Telemetry()

    def handle(self, request: Request) -> Reply:
        """The reply to one request; never raises for a bad request or a failed run.

        Every ``run`` reply, failed ones too, carries ``out_end``: releasing it frees this run's
        output space (if it got any) and that of every earlier run.
        """
        request_id = request["id"]
        try:
            if request["op"] == "run":
                return self._run(request)
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
        except WorkerError as exc:
            error = exc
        except Exception as exc:
            log.exception("%s request %d failed", request["op"], request_id)
            error = WorkerError("INTERNAL", f"{type(exc).__name__}: {exc}")
        out_end = self.channel.output_allocated if request["op"] == "run" else None
        try:
            return error.reply(request_id, out_end=out_end)
        finally:
            # The failed run's frames (its outputs included) hang off the error's traceback in a
            # cycle through this frame, which a steady loop seldom collects: break it here.
            del error

    def _load(self, request: LoadRequest) -> Mapping[str, Any]:
        key, path = request["key"], request["path"]
        loaded = self.models.get(key)
        if loaded is not None and loaded.path == path:
            return loaded.signature
        loader = loader_for(request)
        started = time.perf_counter()
        model = loader(request, self.channel.output_capacity)
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

    def _run(self, request: RunRequest) -> RunReply:
        deadline = request["deadline"]
        if deadline is not None and time.monotonic() >= deadline:
            raise WorkerError("DEADLINE_EXCEEDED", "deadline exceeded before the batch ran")
        key = request["key"]
        model = self.models.get(key)
        if model is None:
            raise WorkerError("NOT_FOUND", f"model {key!r} is not loaded in this worker")
        feeds = dict(read_input(self.channel, t, model.text_strings) for t in request["inputs"])
        trace = self.telemetry.trace(request.get("trace"))
        started = time.perf_counter_ns()
        self.runs[key] += 1
        try:
            results = model.run(request["signature"], feeds, request["outputs"])
        except BaseException:
            if trace is not None:
                trace.abandon()
            raise
        compute_us = (time.perf_counter_ns() - started) / 1000
        spans = None
        if trace is not None:
            spans = trace.finish(self.compute_spans[key])
        del feeds
        outputs = write_outputs(self.channel, results)
        return messages.run_reply(
            request["id"],
            outputs=outputs,
            out_end=self.channel.output_allocated,
            compute_us=compute_us,
            spans=spans,
        )


def _post(channel: Channel, reply: Reply) -> None:
    """Post ``reply``, waiting for a free slot; a reply too big for a slot becomes INTERNAL."""
    deadline = time.monotonic() + _POST_WAIT_S
    data = messages.encode(reply)
    while True:
        try:
            channel.post_completion(data)
            return
        except ChannelFull:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.0005)
        except ValueError as exc:
            log.error("reply to id %d does not fit a slot: %s", reply["id"], exc)
            out_end = reply.get("out_end")
            error = messages.error_reply(
                reply["id"],
                "INTERNAL",
                f"reply too large: {exc}",
                out_end=out_end if isinstance(out_end, int) else None,
            )
            data = messages.encode(error)


def _decode(data: bytes) -> Request | BadRequest:
    try:
        return messages.decode_request(data)
    except BadRequest as exc:
        return exc


def _refuse(channel: Channel, requests: list[Request | BadRequest]) -> None:
    for request in requests:
        request_id = request.request_id if isinstance(request, BadRequest) else request["id"]
        _post(channel, WorkerError("UNAVAILABLE", "worker is shutting down").reply(request_id))


def _wait(channel: Channel, worker: Worker, wake_fd: int | None) -> list[bytes]:
    """The requests waiting on ``channel``, sleeping until some arrive (or a signal: []); a wait
    that found none at first look and returns some counts as one wake-up."""
    requests = channel.wait_submissions(0)
    if requests:
        return requests
    requests = channel.wait_submissions(None, wake_fd=wake_fd)
    if requests:
        worker.telemetry.count_wakeup()
    return requests


def serve(channel: Channel, stopping: Callable[[], bool], wake_fd: int | None = None) -> int:
    """Announce readiness, then serve requests until ``stop`` or ``stopping()``; returns the exit
    status (0). ``wake_fd`` is a descriptor that becomes readable when a signal arrives."""
    worker = Worker(channel)
    _post(channel, messages.ready(os.getpid()))
    while True:
        batch = [_decode(data) for data in _wait(channel, worker, wake_fd)]
        for i, request in enumerate(batch):
            if isinstance(request, BadRequest):
                _post(channel, request.reply(request.request_id))
                continue
            reply = worker.handle(request)
            if request["op"] == "run":
                worker.telemetry.count_run(reply["ok"])
            _post(channel, reply)
            if request["op"] == "stop" or stopping():
                _refuse(channel, batch[i + 1 :])
                _refuse(channel, [_decode(data) for data in channel.wait_submissions(0)])
                log.info("worker %d stopping", channel.index)
                return 0
        if stopping():
            _refuse(channel, [_decode(data) for data in channel.wait_submissions(0)])
            log.info("worker %d stopping", channel.index)
            return 0
