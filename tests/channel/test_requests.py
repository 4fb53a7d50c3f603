"""The requests' constructors build exactly the documented messages, optional fields absent."""

from __future__ import annotations

from channel.requests import (
    DEFAULT_SIGNATURE,
    RunRequest,
    load_request,
    ping_request,
    run_request,
    stop_request,
    unload_request,
)
from tests.channel.samples import X


def test_load_asks_for_the_serve_tags_unless_told() -> None:
    assert load_request(1, key="m:3", path="/m", platform="onnx", intra_op=1, inter_op=2) == {
        "op": "load",
        "id": 1,
        "key": "m:3",
        "path": "/m",
        "platform": "onnx",
        "intra_op": 1,
        "inter_op": 2,
        "tags": ["serve"],
    }
    tagged = load_request(
        2, key="t:1", path="/t/1", platform="tensorflow", intra_op=1, inter_op=1, tags=("a", "b")
    )
    assert tagged["tags"] == ["a", "b"]


def test_run_defaults_to_every_output_no_deadline_the_default_signature_untraced() -> None:
    assert run_request(4, key="m:3", inputs=[X]) == RunRequest(
        id=4, key="m:3", inputs=(X,), outputs=None, deadline=None, signature="", trace=None
    )


def test_run_carries_what_it_is_given() -> None:
    request = run_request(
        5,
        key="m:3",
        inputs=[X],
        outputs=("probs",),
        deadline=12.5,
        signature=DEFAULT_SIGNATURE,
        trace=(2**100, 7),
    )
    assert request.outputs == ("probs",)
    assert (request.deadline, request.signature) == (12.5, "serving_default")
    assert request.trace == (2**100, 7)


def test_ping_names_a_key_only_when_given_one() -> None:
    assert ping_request(6) == {"op": "ping", "id": 6}
    assert ping_request(7, key="m:3") == {"op": "ping", "id": 7, "key": "m:3"}


def test_unload_and_stop() -> None:
    assert unload_request(3, key="m:3") == {"op": "unload", "id": 3, "key": "m:3"}
    assert stop_request(8) == {"op": "stop", "id": 8}
