"""V2 version strings ⇄ TF Serving's versions and labels.

A V2 request names a version as a string (``ModelInferRequest.model_version``, the REST path's
``/versions/{v}``). tensorgate reads it as TF Serving's ``ModelSpec`` would be:

============  ==========================  =============================================
string        resolves to                 when it names nothing
============  ==========================  =============================================
``""``        the latest available        NOT_FOUND "Request for unknown model: 'm' has
              version (TF's ``Latest``)   no available versions" (or "... is not found")
``"3"``       version 3 (ASCII digits,    NOT_FOUND "Request for unknown model: 'm'
``"007"``     leading zeros allowed,      version 3 is not found"
              ≤ 2^63−1)
``"stable"``  the version the label       INVALID_ARGUMENT "Unrecognized servable version
              points at (TF's labels)     label: stable" (TF Serving's text)
============  ==========================  =============================================

Digits past int64 are INVALID_ARGUMENT, however many (the length is checked before ``int()``).
Responses name the version that served as its decimal string (``model_version: "3"``); metadata
lists the available versions likewise, ascending. NOT_FOUND messages are Triton's (the code is
the same).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from gateway.errors import InvalidArgument, NotFound

INT64_MAX = 2**63 - 1


class Target(NamedTuple):
    """The servable a V2 request names: a model and at most one of version or label."""

    name: str
    version: int | None = None
    label: str | None = None


_INT64_DIGITS = len(str(INT64_MAX))


def target(name: str, version: str) -> Target:
    """Read a V2 (model name, version string) pair (see the module docstring)."""
    if not version:
        return Target(name)
    if version.isascii() and version.isdigit():
        found = number(version)
        if found is None:
            shown = version if len(version) <= 40 else f"{version[:20]}...({len(version)} digits)"
            raise InvalidArgument(f"model version '{shown}' is out of range (max {INT64_MAX})")
        return Target(name, version=found)
    return Target(name, label=version)


def number(version: str) -> int | None:
    """The version number ``version`` names (ASCII digits within int64), else None."""
    if not (version.isascii() and version.isdigit()):
        return None
    digits = version.lstrip("0") or "0"
    if len(digits) > _INT64_DIGITS:
        return None
    value = int(digits)
    return value if value <= INT64_MAX else None


def version_string(version: int) -> str:
    """How a response names a version."""
    return str(version)


def version_strings(versions: Iterable[int]) -> list[str]:
    """Metadata's ``versions``: ascending decimal strings."""
    return [str(v) for v in sorted(versions)]


def unknown(found: Target, *, no_versions: bool = False) -> NotFound:
    """Triton's NOT_FOUND for a model or version that does not serve."""
    if found.version is not None:
        return NotFound(
            f"Request for unknown model: '{found.name}' version {found.version} is not found"
        )
    if found.label is not None:
        return NotFound(
            f"Request for unknown model: '{found.name}' version {found.label} is not found"
        )
    if no_versions:
        return NotFound(f"Request for unknown model: '{found.name}' has no available versions")
    return NotFound(f"Request for unknown model: '{found.name}' is not found")
