"""An InferCall's deadline: the timeout parameter or the transport's, whichever is sooner."""

from __future__ import annotations

import pytest

from gateway.v2.call import InferCall
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
