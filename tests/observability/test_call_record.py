"""The neutral call record: what a call starts with before its hook fills it, identity rather
than equality, and CURRENT as each task's own (the batch observer reads it in the request's
task)."""

from __future__ import annotations

import asyncio

import pytest

from gateway.observability.call_record import CURRENT, Call


def test_a_call_opens_ok_without_model_version_rows_or_span() -> None:
    call = Call("tfserving", "Predict", "GRPC", 12.5)
    assert (call.model, call.version, call.status, call.rows) == ("", None, "OK", None)
    assert (call.elapsed_s, call.span, call.ids_token) == (0.0, None, None)


def test_calls_are_records_by_identity_with_fixed_fields() -> None:
    first, second = Call("v2", "ModelInfer", "REST", 1.0), Call("v2", "ModelInfer", "REST", 1.0)
    assert first != second and first == first
    with pytest.raises(AttributeError):
        first.extra = 1  # type: ignore[attr-defined]


async def test_current_is_the_call_of_the_task_that_set_it() -> None:
    async def handle(name: str, seen: dict[str, str], both_set: asyncio.Barrier) -> None:
        CURRENT.set(Call("tfserving", name, "GRPC", 0.0))
        await both_set.wait()
        call = CURRENT.get()
        assert call is not None
        seen[name] = call.api

    seen: dict[str, str] = {}
    both_set = asyncio.Barrier(2)
    await asyncio.gather(handle("Predict", seen, both_set), handle("Classify", seen, both_set))
    assert CURRENT.get() is None  # nothing leaks into the caller's context
    assert seen == {"Predict": "Predict", "Classify": "Classify"}
