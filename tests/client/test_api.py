"""gateway.client's clients over a real channel to a scripted server: round trips, deadlines and
errors, sync and async. (The clients against the real gateway: the end-to-end tests.)"""

from __future__ import annotations

import grpc
import numpy as np
import pytest

from gateway.client import AsyncClient, Client
from tests.client.scripted import DIGITS_METADATA, STATUS, Scripted

IMAGES = np.ones((3, 64), dtype=np.float32)
DEADLINE_SLACK_S = 0.5
"""gRPC rounds a deadline up on the wire (``grpc-timeout`` has 8 digits and a unit)."""
NO_DEADLINE_S = 10**6
"""``time_remaining()`` of a call without a deadline: grpc reports "infinite" as ~292 years."""


def test_client_round_trip(scripted: tuple[str, Scripted]) -> None:
    target, servicer = scripted
    with Client(target, timeout=30.0) as client:
        outputs = client.predict("digits", {"images": IMAGES}, version=1, timeout=None)
        assert client.metadata("digits", version=1) == DIGITS_METADATA
        assert client.status("digits") == STATUS
    np.testing.assert_array_equal(outputs["label"], [7, 7, 7])
    assert outputs["label"].dtype == np.int64
    np.testing.assert_array_equal(outputs["sum"], [64.0, 64.0, 64.0])
    predict, metadata, status = servicer.requests
    assert predict.model_spec.version.value == 1
    assert predict.inputs["images"].tensor_content == IMAGES.tobytes()
    assert list(metadata.metadata_field) == ["signature_def"]
    assert metadata.model_spec.version.value == 1
    assert status.model_spec.name == "digits" and not status.model_spec.HasField("version")
    no_deadline, *with_deadline = servicer.deadlines
    assert no_deadline is None or no_deadline > NO_DEADLINE_S
    assert all(d is not None and 0 < d <= 30.0 + DEADLINE_SLACK_S for d in with_deadline)


def test_client_lets_rpc_errors_propagate(scripted: tuple[str, Scripted]) -> None:
    target, _ = scripted
    with Client(target) as client, pytest.raises(grpc.RpcError) as caught:
        client.predict("missing", {"images": IMAGES})
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == "Servable not found for request: Latest(missing)"


async def test_async_client_round_trip_and_errors(scripted: tuple[str, Scripted]) -> None:
    target, servicer = scripted

    async with AsyncClient(target) as client:
        outputs = await client.predict("digits", {"images": IMAGES}, version_label="stable")
        metadata = await client.metadata("digits")
        status = await client.status("digits", version=2)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await client.status("missing")
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(RuntimeError, match="closed"):
        await client.status("digits")
    np.testing.assert_array_equal(outputs["label"], [7, 7, 7])
    assert metadata == DIGITS_METADATA
    assert status == STATUS
    assert servicer.requests[0].model_spec.version_label == "stable"
    assert servicer.requests[2].model_spec.version.value == 2
    assert all(d is not None and 0 < d <= 10.0 + DEADLINE_SLACK_S for d in servicer.deadlines)


def test_messages_over_the_client_limit_are_refused_before_sending(
    scripted: tuple[str, Scripted],
) -> None:
    target, servicer = scripted
    with Client(target, max_message_bytes=1024) as client:
        with pytest.raises(grpc.RpcError) as caught:
            client.predict("digits", {"images": np.ones((8, 64), np.float32)})  # 2 KiB
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert servicer.requests == []
        outputs = client.predict("digits", {"images": IMAGES[:1]}, output_filter=["label"])
    assert list(servicer.requests[0].output_filter) == ["label"]
    assert outputs["label"].tolist() == [7]


def test_the_client_deadline_and_per_call_overrides(scripted: tuple[str, Scripted]) -> None:
    target, servicer = scripted
    with Client(target, timeout=None) as client:
        client.status("digits")  # the client's own: none
        client.status("digits", timeout=2.0)
    no_deadline, two_seconds = servicer.deadlines
    assert no_deadline is None or no_deadline > NO_DEADLINE_S
    assert two_seconds is not None and 0 < two_seconds <= 2.0 + DEADLINE_SLACK_S


async def test_an_async_client_opens_its_channel_on_first_use_and_closes_twice() -> None:
    client = AsyncClient("127.0.0.1:1")  # nothing listens: no connection is attempted yet
    await client.close()
    await client.close()
    with pytest.raises(RuntimeError, match="AsyncClient is closed"):
        await client.metadata("digits")
