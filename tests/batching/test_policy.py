"""Which options each batch queue gets from the flags."""

from __future__ import annotations

from gateway.batching.policy import BatchingPolicy
from gateway.config.settings import Settings
from gateway.serving.registry import Servable


def _servable() -> Servable:
    return Servable(model="m", version=1, key="m:1", platform="onnx", signatures={})


def test_the_latency_target_reaches_every_queue_batched_or_not() -> None:
    for batching in (False, True):
        settings = Settings(model_base_path="/m", enable_batching=batching, max_queue_delay_ms=250)
        options = BatchingPolicy.from_settings(settings, [], workers=2).for_servable(_servable())
        assert options.max_queue_delay_s == 0.25
        assert options.solo is not batching
    default = BatchingPolicy.from_settings(Settings(model_base_path="/m"), [], workers=2)
    assert default.for_servable(_servable()).max_queue_delay_s == 0.0
