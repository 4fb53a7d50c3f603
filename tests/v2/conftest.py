"""Signatures and servables the V2 codec tests share."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gateway.serving.inputs import Decoded, validated
from gateway.serving.registry import Servable
from gateway.serving.signature import DtypeMismatch, Signature, TensorSpec
from gateway.v2.declared import Limits
from gateway.v2.errors import datatype_mismatch


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


def validate(sig: Signature, decoded: Decoded) -> dict[str, np.ndarray[Any, Any]]:
    """What the core does with a codec's inputs: the one validation, then the arrays (with V2
    datatype names in a dtype mismatch, as the adapters say it)."""
    try:
        return validated(sig, decoded)
    except DtypeMismatch as exc:
        raise datatype_mismatch(exc) from None
