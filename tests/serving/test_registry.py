"""The registry's values: State is TF Serving's ModelVersionStatus.State; pick_servable chooses
the latest, a version or a label, with TF Serving's "Servable not found" texts."""

from __future__ import annotations

import pytest

from gateway._pb.tensorflow_serving.apis import get_model_status_pb2
from gateway.errors import InvalidArgument, NotFound
from gateway.serving.registry import Servable, State, VersionStatus, pick_servable

SERVABLES = {v: Servable("m", v, f"m:{v}", "onnx", {}) for v in (1, 3)}
LABELS = {"stable": 1, "gone": 2}


def test_states_are_tf_serving_s_numbers() -> None:
    proto = get_model_status_pb2.ModelVersionStatus.State
    assert {s.name: int(s) for s in State} == dict(proto.items())


def test_a_version_status_starts_without_error_or_warmup() -> None:
    status = VersionStatus(3, State.LOADING)
    assert (status.error, status.warmup) == (None, ())


def test_the_latest_by_default_else_the_version_or_label_named() -> None:
    assert pick_servable("m", SERVABLES, LABELS) is SERVABLES[3]
    assert pick_servable("m", SERVABLES, LABELS, version=1) is SERVABLES[1]
    assert pick_servable("m", SERVABLES, LABELS, label="stable") is SERVABLES[1]


@pytest.mark.parametrize(
    ("servables", "version", "label", "text"),
    [
        (None, None, None, "Latest(m)"),
        (None, 3, None, "Specific(m, 3)"),
        (None, None, "stable", "Specific(m, label stable)"),
        ({}, None, None, "Latest(m)"),
        (SERVABLES, 2, None, "Specific(m, 2)"),
        (SERVABLES, None, "gone", "Specific(m, 2)"),
    ],
)
def test_not_found_in_tf_serving_s_words(
    servables: dict[int, Servable] | None, version: int | None, label: str | None, text: str
) -> None:
    with pytest.raises(NotFound) as info:
        pick_servable("m", servables, LABELS, version, label)
    assert info.value.message == f"Servable not found for request: {text}"


def test_both_a_version_and_a_label_or_an_unknown_label_are_invalid() -> None:
    with pytest.raises(InvalidArgument, match="ModelSpec has both version and version_label set"):
        pick_servable("m", SERVABLES, LABELS, 1, "stable")
    with pytest.raises(InvalidArgument, match="Unrecognized servable version label: beta"):
        pick_servable("m", SERVABLES, LABELS, label="beta")
