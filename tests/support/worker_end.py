"""The worker's end of a real channel, played by the test (the seam of the link unit tests: no
worker process). It reads what the gateway posted and posts replies as a worker would: run
outputs written into the output area, run replies closing their output range."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from channel import messages
from channel.dtypes import dtype_name
from channel.messages import Reply, Request, RunRequest, TensorDesc
from channel.shm.channel import Channel
from channel.shm.payload import tensor_at, tensor_nbytes, write_tensor

WAIT_S = 30.0
"""Bound of every wait (never reached when things work)."""


class WorkerEnd:
    """The worker's side of ``channel``."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def requests(self) -> list[Any]:
        """Every request the gateway has posted since the last call, decoded, in order (typed
        Any: tests read a run's fields by attribute, the others' by key)."""
        return [messages.decode_request(data) for data in self.channel.wait_submissions(0)]

    def post(self, reply: Reply) -> None:
        """Post ``reply`` (the gateway's doorbell rings if it sleeps)."""
        self.channel.post_completion(messages.encode(reply))

    def inputs(self, request: RunRequest) -> dict[str, np.ndarray]:
        """A run's inputs, copied out of the input area."""
        return {t.name: tensor_at(self.channel.input_area, t).copy() for t in request.inputs}

    def run_reply(
        self, request: Request, outputs: Mapping[str, np.ndarray], compute_us: float = 5.0
    ) -> Reply:
        """The reply of a run that computed ``outputs``: written into the output area, the range
        closed by the reply's ``out_end``."""
        descs: list[TensorDesc] = []
        for name, array in outputs.items():
            nbytes = tensor_nbytes(array)
            offset = self.channel.alloc_output(nbytes, timeout=0)
            write_tensor(self.channel.output_view(offset, nbytes), array)
            descs.append(TensorDesc(name, dtype_name(array.dtype), array.shape, offset, nbytes))
        end = self.channel.output_allocated
        request_id = messages.request_id(request)
        return messages.run_reply(request_id, outputs=descs, out_end=end, compute_us=compute_us)

    def answer_runs(self, compute: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]) -> int:
        """Answer every run posted so far with ``compute``'s outputs; how many there were."""
        runs = [r for r in self.requests() if isinstance(r, RunRequest)]
        for run in runs:
            self.post(self.run_reply(run, compute(self.inputs(run))))
        return len(runs)


async def resolved(future: asyncio.Future[Any]) -> Any:
    """``future``'s result once the loop has taken the reply that resolves it (bounded)."""
    return await asyncio.wait_for(asyncio.shield(future), WAIT_S)
