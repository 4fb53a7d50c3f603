"""TF Serving's rules on a new model config, with its texts: no platform change, labels only on
available versions (a new label may wait with the flag), and the error naming new models that did
not become available."""

from __future__ import annotations

import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import Code, FailedPrecondition, InvalidArgument, NotFound
from gateway.models import reload_rules


def _spec(name: str, platform: str = "onnx", **labels: int) -> ModelSpecConfig:
    return ModelSpecConfig(name, f"/models/{name}", platform=platform, labels=labels)


def test_a_model_in_both_configs_keeps_its_platform() -> None:
    current = {"m": _spec("m")}
    reload_rules.check_platforms(current, [_spec("m"), _spec("new", "tensorflow")])
    with pytest.raises(
        InvalidArgument,
        match=r"^Illegal to change a model's platform. For model m platform was onnx and new "
        r"platform requested is tensorflow$",
    ):
        reload_rules.check_platforms(current, [_spec("m", "tensorflow")])


def test_labels_name_available_versions_unless_a_new_label_may_wait() -> None:
    available = {("m", 1), ("m", 2)}

    def is_available(name: str, version: int) -> bool:
        return (name, version) in available

    current = {"m": _spec("m", stable=1)}
    reload_rules.check_labels(
        current, [_spec("m", stable=2, canary=1)], is_available, allow_unavailable=False
    )
    refused = (
        FailedPrecondition,
        (
            r"^Request to assign label to version 9 of model m, which is not currently available "
            r"for inference$"
        ),
    )
    with pytest.raises(refused[0], match=refused[1]):
        reload_rules.check_labels(
            current, [_spec("m", next=9)], is_available, allow_unavailable=False
        )
    reload_rules.check_labels(  # a new label may wait for its version
        current, [_spec("m", stable=1, next=9)], is_available, allow_unavailable=True
    )
    with pytest.raises(refused[0], match=refused[1]):  # an in-use label never moves there
        reload_rules.check_labels(
            current, [_spec("m", stable=9)], is_available, allow_unavailable=True
        )


def test_new_models_that_did_not_become_available_make_one_unknown_error() -> None:
    error = reload_rules.not_available_error(
        {("b", 4): NotFound("gone"), ("a", -1): None, ("c", 2): None}
    )
    assert error.code == Code.UNKNOWN
    assert error.message == (
        "3 model(s) did not become available: {{{name: a} found no version to load}, "
        "{{name: b version: 4} due to error: NOT_FOUND: gone}, {{name: c version: 2}}, }"
    )
