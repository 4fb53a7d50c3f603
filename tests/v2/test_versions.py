"""V2 version strings ⇄ TF Serving versions and labels; Triton's not-found texts."""

from __future__ import annotations

import pytest

from gateway.errors import InvalidArgument, NotFound
from gateway.v2 import versions
from gateway.v2.versions import Target


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", Target("m")),
        ("3", Target("m", version=3)),
        ("007", Target("m", version=7)),
        (str(2**63 - 1), Target("m", version=2**63 - 1)),
        ("stable", Target("m", label="stable")),
        ("-1", Target("m", label="-1")),
        ("v3", Target("m", label="v3")),
        ("٣", Target("m", label="٣")),  # a non-ASCII digit is no version number
    ],
)
def test_version_strings(text: str, expected: Target) -> None:
    assert versions.target("m", text) == expected


def test_version_out_of_int64_is_invalid() -> None:
    with pytest.raises(InvalidArgument, match="out of range"):
        versions.target("m", str(2**63))


def test_triton_not_found_texts() -> None:
    assert versions.unknown(Target("m")).message == "Request for unknown model: 'm' is not found"
    assert versions.unknown(Target("m", version=4)).message == (
        "Request for unknown model: 'm' version 4 is not found"
    )
    assert versions.unknown(Target("m", label="beta")).message == (
        "Request for unknown model: 'm' version beta is not found"
    )
    unserved = versions.unknown(Target("m"), no_versions=True)
    assert isinstance(unserved, NotFound)
    assert unserved.message == "Request for unknown model: 'm' has no available versions"
    assert versions.version_strings([10, 2]) == ["2", "10"]


def test_a_version_past_python_s_digit_limit_is_invalid_not_internal() -> None:
    """``int()`` of more than 4,300 digits raises ValueError: the length is checked first;
    leading zeros still read as one version."""
    with pytest.raises(InvalidArgument, match="out of range"):
        versions.target("m", "9" * 5000)
    assert versions.target("m", "0" * 5000 + "3") == Target("m", version=3)
    assert versions.number("9" * 5000) is None and versions.number("beta") is None
