"""An InferCall's deadline: the timeout parameter or the transport's, whichever is sooner."""

from __future__ import annotations

import pytest

from gateway.v2.call import InferCall, RequestedOutput
from gateway.v2.parameters import RequestOptions
from gateway.v2.versions import Target


def test_deadline_from_the_timeout_parameter() -> None:
    plain = InferCall(Target("m"), "", RequestOptions())
    assert plain.deadline(100.0, None) is None
    assert plain.deadline(100.0, 105.0) == 105.0
    timed = InferCall(Target("m"), "", RequestOptions(timeout_us=2_000_000))
    assert timed.deadline(100.0, None) == pytest.approx(102.0)
    assert timed.deadline(100.0, 101.0) == 101.0
    assert timed.deadline(100.0, 110.0) == pytest.approx(102.0)


def test_an_output_requested_twice_is_computed_and_answered_once() -> None:
    """Triton answers 200 for a duplicate requested output; TF Serving's
    output_filter refuses duplicates, so V2 asks the core for each name once."""
    call = InferCall(
        Target("m"),
        "",
        RequestOptions(),
        (RequestedOutput("y"), RequestedOutput("z", True), RequestedOutput("y", True)),
    )
    assert call.output_filter() == ["y", "z"]
    assert call.binary_outputs(["y", "z"]) == {"y", "z"}
