"""The gateway's end of one real worker process, driven by hand: typed requests by id, tensors in
and out of the shared-memory areas."""

from __future__ import annotations

import functools
import itertools
import json
import select
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from channel import messages
from channel.dtypes import dtype_name
from channel.messages import TensorDesc
from channel.shm.channel import Channel
from channel.shm.payload import read_tensor, tensor_nbytes, write_tensor
from workers.bootstrap import spawn_worker

WAIT_S = 30.0
"""Upper bound of every wait on a worker (never reached when things work)."""


class Harness:
    """The gateway's end of one worker: typed requests by id, tensors in and out of the areas."""

    def __init__(self, **layout: int) -> None:
        self.channel = Channel.create(
            index=0, **{"input_bytes": 1 << 20, "output_bytes": 1 << 20, **layout}
        )
        self.proc = spawn_worker(self.channel, log_level="WARNING")
        self._poll = select.poll()
        self._poll.register(self.channel.complete_fd, select.POLLIN)
        self._ids = itertools.count(messages.READY_ID + 1)
        self._replies: dict[int, dict[str, Any]] = {}
        self.ready = self.reply(messages.READY_ID)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(WAIT_S)
        self.channel.close()

    def send(self, make: Callable[[int], messages.Request]) -> int:
        """Post the request ``make(id)`` builds (a constructor of :mod:`channel.messages`)."""
        request = make(next(self._ids))
        self.channel.submit(messages.encode(request))
        return request["id"]

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
                completion = dict(messages.decode_reply(data))
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
        return {
            "name": name,
            "dtype": dtype_name(arr.dtype),
            "shape": list(arr.shape),
            "offset": offset,
            "nbytes": nbytes,
        }

    def finish(self, inputs: list[TensorDesc], reply: dict[str, Any]) -> dict[str, Any]:
        """Copy the outputs of ``reply`` out, then free its inputs and release its outputs."""
        outputs = {
            t["name"]: read_tensor(
                self.channel.output_view(t["offset"], t["nbytes"]), t["dtype"], t["shape"]
            ).copy()
            for t in reply.get("outputs", [])
        }
        for t in inputs:
            self.channel.free_input(t["offset"])
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
