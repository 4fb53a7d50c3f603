"""The whole server's metrics page as the supervisor writes it: every joined front end's figures
(asked over real message links) and the supervisor's own, added up once; a front end that does
not answer counts with its previous answer, and one that departed with its last, for good. The
one fake: a front end is a stand-in answering ``figures`` from its own recorder; the pool is a
real one not started (no workers to ask)."""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from channel.handover import Message
from gateway.errors import Unavailable
from gateway.ipc import figures
from gateway.ipc.link import MessageLink
from gateway.observability.metrics import GatewayMetrics, set_runs_in
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.runs.dispatcher import Dispatcher
from gateway.supervisor.fleet_page import FleetPage
from gateway.worker_pool.pool import PoolOptions, WorkerPool

COUNT = re.compile(rb':tensorflow:serving:request_count\{model_name="m",status="OK"\} (\S+)')
RUNS_IN = re.compile(
    rb'tensorgate_model_runs_in\{model_name="m",runs_in="workers",version="1"\} (\S+)'
)


@dataclass
class FrontEnd:
    """A joined front end (``fronts``: the supervisor's dict of them): ``link`` is the
    supervisor's end; its own answers ``figures`` with what ``tfs`` recorded, or fails while
    ``down``; ``metrics``: its gateway series (where it runs versions)."""

    slot: int
    serial: int
    link: MessageLink
    tfs: TfServingMetrics = field(default_factory=TfServingMetrics)
    metrics: GatewayMetrics = field(default_factory=GatewayMetrics)
    down: bool = False
    peer: MessageLink | None = None

    async def _figures(self) -> dict[str, Any]:
        if self.down:
            raise Unavailable("busy")
        return {"figures": figures.dump(self.tfs, self.metrics, {})}

    def handle(self, message: Message, fds: list[int]) -> Any:
        assert message["op"] == "figures"
        return self._figures()


def front_end(slot: int) -> FrontEnd:
    ours, theirs = socket.socketpair()
    front = FrontEnd(slot, 100 + slot, MessageLink(ours, name=f"front end {slot}"))
    front.peer = MessageLink(theirs, front.handle, name="supervisor")
    return front


@asynccontextmanager
async def fleet() -> AsyncIterator[tuple[FleetPage, dict[int, FrontEnd], TfServingMetrics]]:
    """The supervisor's page over two stand-in front ends, and its own TF Serving metrics."""
    fronts: dict[int, Any] = {0: front_end(0), 1: front_end(1)}
    everyone = list(fronts.values())
    own = TfServingMetrics()
    pool = WorkerPool(
        PoolOptions(workers=1, input_bytes=4096, output_bytes=4096), dispatcher=Dispatcher()
    )
    try:
        yield FleetPage(fronts, pool, own), fronts, own
    finally:
        for front in everyone:
            front.link.close()
            assert front.peer is not None
            front.peer.close()


def _count(page: bytes, series: re.Pattern[bytes] = COUNT) -> float:
    found = series.search(page)
    assert found is not None, page.decode()
    return float(found.group(1))


def _calls(tfs: TfServingMetrics, n: int) -> None:
    for _ in range(n):
        tfs.request_count.inc(("m", "OK"))


async def test_the_page_adds_every_front_end_and_the_supervisor_once() -> None:
    async with fleet() as (page, fronts, own):
        _calls(fronts[0].tfs, 2)
        _calls(fronts[1].tfs, 3)
        _calls(own, 1)
        assert _count(await page.render()) == 6
        assert _count(await page.render()) == 6  # a second scrape counts nothing twice
        assert b"tensorgate_worker_restarts" in await page.render()


async def test_a_front_end_that_does_not_answer_counts_with_its_previous_answer() -> None:
    async with fleet() as (page, fronts, _own):
        _calls(fronts[0].tfs, 2)
        assert _count(await page.render()) == 2
        _calls(fronts[0].tfs, 5)
        fronts[0].down = True
        assert _count(await page.render()) == 2
        fronts[0].down = False
        assert _count(await page.render()) == 7


async def test_a_departed_front_end_counts_with_its_last_answer_for_good() -> None:
    async with fleet() as (page, fronts, _own):
        _calls(fronts[0].tfs, 2)
        _calls(fronts[1].tfs, 3)
        for front in fronts.values():
            set_runs_in(front.metrics, {"m:1": "workers"})
        assert _count(await page.render()) == 5
        assert _count(await page.render(), RUNS_IN) == 2
        page.departed(fronts.pop(1))  # type: ignore[arg-type]
        _calls(fronts[0].tfs, 1)
        assert _count(await page.render()) == 6
        assert _count(await page.render()) == 6
        assert _count(await page.render(), RUNS_IN) == 1  # a gauge: gone with its front end
