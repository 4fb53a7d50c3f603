"""Warmup replay on one worker, before it takes traffic for a servable.

The requests themselves are decoded above (``gateway/tfserving/warmup.py`` reads TF Serving's
``assets.extra/tf_serving_warmup_requests``) into plain data
(:mod:`gateway.worker_channel.warmup_runs`); here each :class:`WarmupRun` is sent to the worker
as an ordinary run, ``iterations`` times, while the servable is loaded in that worker but not yet
routed to it. The worker counts the runs it sees per servable; its answer to a ``ping`` naming
the servable ends the replay, so the report carries the worker's own count.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import numpy as np

from gateway.errors import InputTooLarge, ResourceExhausted, ServingError
from gateway.worker_channel.lease import take
from gateway.worker_channel.run_link import RunLink
from gateway.worker_channel.warmup_runs import WarmupReport, WarmupRun
from gateway.worker_pool.control import ControlLink
from gateway.worker_pool.run_router import RunRouter

log = logging.getLogger(__name__)


async def warm_up(
    link: RunLink,
    control: ControlLink,
    key: str,
    runs: Sequence[WarmupRun],
    dispatcher: RunRouter,
) -> WarmupReport:
    """Replay ``runs`` over ``link``, one at a time, and ask the worker (over ``control``) how
    many runs of ``key`` it saw. ``dispatcher`` says when a run finished somewhere (room may have
    freed in a full input area).

    Raises the ServingError of the first failing required run, prefixed with its ``what``.
    """
    started = time.monotonic()
    for run in runs:
        for _ in range(run.iterations):
            try:
                await _run_with_room(link, key, run, dispatcher)
            except ServingError as exc:
                if run.required:
                    raise type(exc)(f"{run.what}: {exc.message}", exc.code) from None
                log.warning("%s on %s failed (ignored): %s", run.what, key, exc.message)
                break
    reply = await control.ping(key)
    return WarmupReport(link.index, int(reply.get("runs", 0)), time.monotonic() - started)


async def _run_with_room(link: RunLink, key: str, run: WarmupRun, dispatcher: RunRouter) -> None:
    """Submit ``run``; while the worker's input area or ring is full of other servables' runs,
    wait for one of them to finish and try again. Larger than the whole area, or full with
    nothing in flight: it cannot fit.
    The outputs are not read: their lease goes back as soon as the run is done."""
    layout = {name: (array.dtype, array.shape) for name, array in run.inputs.items()}

    def fill(name: str, dest: np.ndarray) -> None:
        dest[...] = run.inputs[name]

    while True:
        try:
            future = link.submit(key, layout, fill, run.outputs, None, run.signature)
        except InputTooLarge:
            raise
        except ResourceExhausted as exc:
            if link.runs_in_flight == 0:
                raise ResourceExhausted(
                    f"{exc.message.removesuffix('; retry later')} even with nothing else in "
                    "flight (raise --worker_arena_mb)"
                ) from None
            await _capacity(dispatcher)
            continue
        (await take(future)).release()
        return


async def _capacity(dispatcher: RunRouter) -> None:
    """Return the next time a run finishes somewhere (a slot may have freed)."""
    freed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not freed.done():
            freed.set_result(None)

    dispatcher.on_capacity(wake)
    await freed
