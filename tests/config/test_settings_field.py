"""A settings field carries its default and its documentation."""

from __future__ import annotations

import dataclasses

from gateway.config.settings_field import MIB, setting


@dataclasses.dataclass(frozen=True)
class _Example:
    size_bytes: int = setting(4 * MIB, "Bytes of something (>= 1). Default 4 MiB.")


def test_the_default_and_the_doc_travel_with_the_field() -> None:
    (only,) = dataclasses.fields(_Example)
    assert only.default == 4 * MIB == 4 * 1024 * 1024
    assert only.metadata["doc"] == "Bytes of something (>= 1). Default 4 MiB."
    assert _Example().size_bytes == 4 * MIB
    assert _Example(size_bytes=1).size_bytes == 1
