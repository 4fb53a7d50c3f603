"""Loads as independent jobs, with a fake pool at the one seam.

Each version loads in a job of its own: at most ``--num_load_threads`` attempts at once (the
first config: TF Serving's initial load threads), a retry waiting its interval holds no slot and
shows its last error, and nothing else — other versions, other models, reloads, the next poll —
waits for it. Whatever a load raises is that attempt's failure. Time never passes: retries wait
an hour, and every "not blocked" is checked after the loop has run all it can (``settle``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TypeVar

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import Code, FailedPrecondition
from gateway.models.base_path import BasePathWatch
from gateway.models.jobs import ModelState, VersionJobs
from gateway.models.loader import LoadOptions, VersionLoader
from gateway.serving.registry import Servable, State
from tests.models.harness import manager, versions
from tests.support.fakes import FakePool
from tests.support.idle_loop import settle

T = TypeVar("T")
WAIT_S = 30.0
"""Bound of every wait (never reached when things work)."""
HOUR_S = 3600.0


async def test_whatever_a_load_raises_is_that_attempts_failure_and_is_retried(
    tmp_path: Path,
) -> None:
    """The pool once raised ``ValueError: channel is closed`` from a load whose worker died
    under it; the poll task died of it and the version stayed LOADING forever."""
    versions(tmp_path, 1)
    pool = FakePool(fail={"m:1": ValueError("channel is closed")}, fail_times={"m:1": 1})
    models = manager(pool, ModelSpecConfig("m", str(tmp_path)), options=LoadOptions(retries=1))
    await models.reconcile()
    assert pool.calls == [("load", "m:1"), ("load", "m:1")]
    (status,) = models.statuses("m")
    assert status.state == State.AVAILABLE and status.error is None


async def test_an_unexpected_load_error_that_persists_ends_the_version_as_internal(
    tmp_path: Path,
) -> None:
    versions(tmp_path / "bad", 1)
    versions(tmp_path / "good", 1)
    pool = FakePool(fail={"bad:1": ValueError("channel is closed")})
    models = manager(
        pool,
        ModelSpecConfig("bad", str(tmp_path / "bad")),
        ModelSpecConfig("good", str(tmp_path / "good")),
    )
    await models.reconcile()
    (status,) = models.statuses("bad")
    assert status.state == State.END and status.error is not None
    assert (status.error.code, status.error.message) == (
        Code.INTERNAL,
        "ValueError: channel is closed",
    )
    assert models.is_available("good")


async def test_a_retry_waiting_its_interval_blocks_no_version_model_poll_or_reload(
    tmp_path: Path,
) -> None:
    """While a half-written m:3 waits its retry (the default minute; here an hour), another
    model's new version appears, an added model is applied and the reload is answered."""
    versions(tmp_path / "m", 3)
    versions(tmp_path / "n", 1)
    versions(tmp_path / "b", 1)
    m, n, b = (ModelSpecConfig(x, str(tmp_path / x)) for x in "mnb")
    half_written = FailedPrecondition("model.onnx is truncated")
    pool = FakePool(fail={"m:3": half_written})
    models = manager(pool, m, n, options=LoadOptions(retries=5, retry_interval_s=HOUR_S))

    first = asyncio.create_task(models.reconcile())
    await settle()
    (status,) = models.statuses("m")
    assert status.state == State.LOADING and status.error is half_written  # its last error
    assert models.is_available("n")
    versions(tmp_path / "n", 2)
    poll = asyncio.create_task(models.reconcile())  # the next poll finds n's version 2
    await settle()
    assert poll.done(), "the poll waits for m:3's retry"
    assert models.resolve("n").version == 2 and ("unload", "n:1") in pool.calls
    reload = asyncio.create_task(models.apply([m, n, b]))  # adds b
    await settle()
    assert reload.done(), "the reload waits for m:3's retry"
    await reload
    assert models.resolve("b").version == 1
    assert not first.done() and pool.calls.count(("load", "m:3")) == 1  # still waiting
    await asyncio.wait_for(models.apply([n, b]), WAIT_S)  # m dropped: its wait ends
    await asyncio.wait_for(first, WAIT_S)
    assert models.statuses("m")[0].state == State.END


async def test_at_most_num_load_threads_attempts_run_at_once(tmp_path: Path) -> None:
    """``--num_load_threads``: the first config loads with TF Serving's initial load threads,
    every later change with ``--num_load_threads``."""
    for name in "abc":
        versions(tmp_path / name, 1)
    specs = [ModelSpecConfig(x, str(tmp_path / x)) for x in "abc"]
    pool = FakePool()
    models = manager(pool, options=LoadOptions(threads=1, initial_threads=2))

    pool.gate = asyncio.Event()
    start = asyncio.create_task(models.apply(specs))
    await settle()
    assert pool.loading == 2 and len(pool.calls) == 2  # the third waits for a slot
    pool.gate.set()
    await asyncio.wait_for(start, WAIT_S)
    assert pool.peak == 2 and models.all_available()
    pool.gate, pool.peak = asyncio.Event(), 0
    for name in "abc":
        versions(tmp_path / name, 2)
    poll = asyncio.create_task(models.reconcile())
    await settle()
    assert pool.loading == 1  # one at a time, as TF Serving's default num_load_threads 0
    pool.gate.set()
    await asyncio.wait_for(poll, WAIT_S)
    assert pool.peak == 1 and [models.resolve(x).version for x in "abc"] == [2, 2, 2]


async def test_a_new_config_stops_a_load_still_waiting_for_a_slot(tmp_path: Path) -> None:
    """A reload that drops a model whose load waits behind others ends that wait at once (TF
    Serving's "Loading of servable cancelled") instead of waiting for the loads ahead."""
    versions(tmp_path / "a", 1)
    versions(tmp_path / "b", 1)
    a, b = (ModelSpecConfig(x, str(tmp_path / x)) for x in "ab")
    pool = FakePool()
    models = manager(pool, a, b, options=LoadOptions(threads=1))

    pool.gate = asyncio.Event()
    loading = asyncio.create_task(models.reconcile())
    await settle()
    assert pool.calls == [("load", "a:1")]  # b waits for the one slot
    dropped = asyncio.create_task(models.apply([a]))
    await settle()
    assert dropped.done(), "the reload waits for the load ahead of b's"
    await dropped
    (status,) = models.statuses("b")
    assert status.state == State.END and status.error is not None
    assert (status.error.code, status.error.message) == (
        Code.CANCELLED,
        "Loading of servable cancelled",
    )
    pool.gate.set()
    await asyncio.wait_for(loading, WAIT_S)
    assert pool.calls == [("load", "a:1")] and models.all_available()


# -- VersionJobs on its own (the fake pool as its workers) ---------------------------------------
def _jobs(pool: FakePool, events: list[str]) -> tuple[VersionJobs, ModelState]:
    async def before_unload(servable: Servable) -> None:
        events.append(f"drain {servable.key}")

    loader = VersionLoader(workers=pool, intra_op=1, inter_op=1)
    jobs = VersionJobs(loader, pool, lambda: events.append("changed"), before_unload)
    model = ModelState(ModelSpecConfig("m", "unused"), BasePathWatch("m"))
    return jobs, model


async def test_a_version_job_goes_loading_then_available_and_leaves_the_jobs(
    tmp_path: Path,
) -> None:
    versions(tmp_path, 1)

    events: list[str] = []
    jobs, model = _jobs(FakePool(), events)
    job = jobs.start(model, 1, str(tmp_path / "1"))
    assert model.versions[1].state == State.LOADING and model.jobs == {1: job}
    await job
    assert model.versions[1].state == State.AVAILABLE and model.versions[1].error is None
    assert model.servables[1].key == "m:1" and model.jobs == {}
    assert events == ["changed", "changed"]


async def test_a_failed_load_ends_the_version_with_its_error(tmp_path: Path) -> None:
    versions(tmp_path, 1)

    pool = FakePool(fail={"m:1": FailedPrecondition("bad model")})
    jobs, model = _jobs(pool, [])
    await jobs.start(model, 1, str(tmp_path / "1"))
    status = model.versions[1]
    assert status.state == State.END and status.error is not None
    assert status.error.message == "bad model" and model.servables == {}


async def test_the_swap_unloads_stale_versions_only_once_an_aspired_one_serves(
    tmp_path: Path,
) -> None:
    versions(tmp_path, 1, 2)

    events: list[str] = []
    pool = FakePool()
    jobs, model = _jobs(pool, events)
    await jobs.start(model, 1, str(tmp_path / "1"))
    model.aspired = (2,)
    await jobs.unload_stale(model)
    assert 1 in model.servables  # no aspired version serves yet: 1 stays
    events.clear()
    await jobs.start(model, 2, str(tmp_path / "2"))
    assert sorted(model.servables) == [2] and model.versions[1].state == State.END
    assert ("unload", "m:1") in pool.calls
    assert events == ["changed", "changed", "changed", "drain m:1", "changed"]
