"""CallAdmission: the draining and concurrency bound the gRPC gate and the REST front share."""

from __future__ import annotations

import asyncio

from gateway.errors import Code
from gateway.transport.call_admission import DRAINING, CallAdmission
from gateway.transport.gate import Gate
from gateway.transport.http.front import Front
from tests.support.idle_loop import settle


def test_the_bound_refuses_only_bounded_calls_past_the_limit() -> None:
    admission = CallAdmission(max_concurrent=1)
    assert admission.refusal() is None
    admission.enter()
    refusal = admission.refusal()
    assert refusal is not None and refusal.code == Code.UNAVAILABLE
    assert "--max_concurrent_requests" in refusal.message
    assert admission.refusal(bounded=False) is None
    assert admission.refused_busy == 1
    admission.leave()
    assert admission.refusal() is None


async def test_draining_refuses_everything_and_waits_for_the_calls_in_flight() -> None:
    admission = CallAdmission()
    admission.enter()
    admission.start_draining()
    refusal = admission.refusal(bounded=False)
    assert refusal is not None and refusal.message == DRAINING
    seen: list[str] = []
    waiter = asyncio.create_task(admission.wait_idle())
    await settle()
    seen.append(f"waiting={not waiter.done()}")
    admission.leave()
    await waiter
    seen.append(f"in_flight={admission.in_flight}")
    assert seen == ["waiting=True", "in_flight=0"]


def test_both_fronts_are_admissions() -> None:
    front = Front(max_concurrent=1)
    front.enter()
    assert front.in_flight == 1 and front.refusal() is not None
    assert Gate(max_concurrent=3).max_concurrent == 3
