"""Signatures and servables the V2 codec tests share."""

from __future__ import annotations

import pytest

from gateway.serving.registry import Servable
from gateway.serving.signature import Signature, TensorSpec
from gateway.v2.declared import Limits


def signature(
    inputs: dict[str, tuple[str, tuple[int, ...] | None]],
    outputs: dict[str, tuple[str, tuple[int, ...] | None]] | None = None,
    name: str = "serving_default",
    *,
    check_shapes: bool = True,
) -> Signature:
    """A signature from ``{alias: (canonical dtype, shape)}`` tables."""
    return Signature(
        name=name,
        inputs=tuple(TensorSpec(n, d, s) for n, (d, s) in inputs.items()),
        outputs=tuple(TensorSpec(n, d, s) for n, (d, s) in (outputs or {}).items()),
        check_shapes=check_shapes,
    )


def servable(*signatures: Signature, platform: str = "onnx", version: int = 2) -> Servable:
    return Servable(
        model="m",
        version=version,
        key=f"m:{version}",
        platform=platform,
        signatures={s.name: s for s in signatures},
    )


@pytest.fixture
def limits() -> Limits:
    return Limits(max_elements=1000, max_bytes=100_000)
