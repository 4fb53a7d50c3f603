"""The gateway's end of one real worker process, driven by hand: typed requests by id, tensors in
and out of the shared-memory areas; with ``handover``, more channels handed to the worker as a
supervisor hands them (each driven the same way: :meth:`Harness.attach`).

Replies come back as dicts, for the tests' convenience: a successful run's
:class:`~channel.messages.RunReply` as its fields plus ``"ok": True``."""

from __future__ import annotations

import functools
import itertools
import json
import os
import select
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from channel import handover, messages
from channel.dtypes import dtype_name
from channel.messages import TensorDesc
from channel.shm.channel import Channel
from channel.shm.payload import tensor_at, tensor_nbytes, write_tensor
from workers.bootstrap import spawn_worker

WAIT_S = 30.0
"""Upper bound of every wait on a worker (never reached when things work)."""


class ChannelEnd:
    """The gateway's end of one channel to a worker process ``proc``: typed requests by id,
    tensors in and out of the areas."""

    def __init__(self, channel: Channel, proc: subprocess.Popen[bytes]) -> None:
        self.channel = channel
        self.proc = proc
        self._poll = select.poll()
        self._poll.register(self.channel.complete_fd, select.POLLIN)
        self._ids = itertools.count(messages.READY_ID + 1)
        self._replies: dict[int, dict[str, Any]] = {}

    def send(self, make: Callable[[int], messages.Request]) -> int:
        """Post the request ``make(id)`` builds (a constructor of :mod:`channel.messages`)."""
        request = make(next(self._ids))
        self.channel.submit(messages.encode(request))
        return messages.request_id(request)

    def send_raw(self, fields: dict[str, Any]) -> int:
        """Post ``fields`` plus a fresh id as JSON, bypassing the constructors."""
        request_id = next(self._ids)
        self.channel.submit(json.dumps({**fields, "id": request_id}).encode())
        return request_id

    def reply(self, request_id: int) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_S
        while request_id not in self._replies:
            exited = self.proc.poll() is not None  # read before draining: replies come first
            self._poll.poll(0 if exited else 100)
            for data in self.channel.completions():
                reply = messages.decode_reply(data)
                if isinstance(reply, messages.RunReply):
                    completion = {"ok": True, **reply._asdict()}
                else:
                    completion = dict(reply)
                self._replies[completion["id"]] = completion
            if request_id not in self._replies and (exited or time.monotonic() > deadline):
                raise AssertionError(f"no reply to {request_id}; worker rc={self.proc.poll()}")
        return self._replies.pop(request_id)

    def call(self, make: Callable[[int], messages.Request]) -> dict[str, Any]:
        return self.reply(self.send(make))

    def ping(self) -> dict[str, Any]:
        return self.call(messages.ping_request)

    def load(self, key: str, path: str, **fields: Any) -> dict[str, Any]:
        fields = {"platform": "onnx", "intra_op": 1, "inter_op": 1, **fields}
        return self.call(functools.partial(messages.load_request, key=key, path=path, **fields))

    def unload(self, key: str) -> dict[str, Any]:
        return self.call(functools.partial(messages.unload_request, key=key))

    def put(self, name: str, arr: np.ndarray[Any, Any]) -> TensorDesc:
        nbytes = tensor_nbytes(arr)
        offset = self.channel.alloc_input(nbytes)
        assert offset is not None, "input area full"
        write_tensor(self.channel.input_view(offset, nbytes), arr)
        return TensorDesc(name, dtype_name(arr.dtype), arr.shape, offset, nbytes)

    def finish(self, inputs: list[TensorDesc], reply: dict[str, Any]) -> dict[str, Any]:
        """Copy the outputs of ``reply`` out, then free its inputs and release its outputs."""
        outputs = {
            t.name: tensor_at(self.channel.output_area, t).copy() for t in reply.get("outputs", [])
        }
        for t in inputs:
            self.channel.free_input(t.offset)
        self.channel.release_outputs(reply["out_end"])
        return outputs

    def send_run(self, key: str, inputs: list[TensorDesc], **fields: Any) -> int:
        return self.send(functools.partial(messages.run_request, key=key, inputs=inputs, **fields))

    def run(
        self, key: str, feeds: dict[str, np.ndarray[Any, Any]], **fields: Any
    ) -> tuple[dict[str, Any], dict[str, np.ndarray[Any, Any]]]:
        inputs = [self.put(name, arr) for name, arr in feeds.items()]
        reply = self.reply(self.send_run(key, inputs, **fields))
        return reply, self.finish(inputs, reply)


class Harness(ChannelEnd):
    """One worker process and the gateway's end of its first channel; with ``handover``, a
    supervisor's socket to hand it more (:meth:`attach`, :meth:`detach`)."""

    def __init__(self, *, handover: bool = False, **layout: int) -> None:
        self.layout = {"input_bytes": 1 << 20, "output_bytes": 1 << 20, **layout}
        channel = Channel.create(index=0, **self.layout)
        self.handover: socket.socket | None = None
        theirs = None
        if handover:
            self.handover, theirs = socket.socketpair()
        try:
            proc = spawn_worker(
                channel,
                log_level="WARNING",
                handover_fd=None if theirs is None else theirs.fileno(),
            )
        finally:
            if theirs is not None:
                theirs.close()
        super().__init__(channel, proc)
        self.ready = self.reply(messages.READY_ID)
        self.attached: list[ChannelEnd] = []

    def attach(self, owner: int) -> ChannelEnd:
        """A new channel, handed to the worker for ``owner``; the gateway's end of it."""
        if self.handover is None:
            raise RuntimeError("this worker has no handover socket")
        channel = Channel.create(index=0, **self.layout)
        copies = [os.dup(fd) for fd in channel.fds]
        try:
            handover.send(self.handover, {"op": "attach", "owner": owner}, copies)
        finally:
            handover.close_all(copies)
        end = ChannelEnd(channel, self.proc)
        self.attached.append(end)
        return end

    def detach(self, owner: int) -> None:
        """Tell the worker that ``owner`` is gone."""
        if self.handover is None:
            raise RuntimeError("this worker has no handover socket")
        handover.send(self.handover, {"op": "detach", "owner": owner})

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(WAIT_S)
        self.channel.close()
        for end in self.attached:
            end.channel.close()
        if self.handover is not None:
            self.handover.close()
