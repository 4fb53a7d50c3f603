"""REST JSON test helpers: signatures in one line, a request body decoded as the server does."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.errors import InvalidArgument, ServingError
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.rest import json_request
from gateway.tfserving.rest.json_request import Format

MAX = 10**6
"""The element limit :func:`decode` passes."""


def sig(*inputs: tuple[str, str], outputs: tuple[str, ...] = ("y",)) -> Signature:
    """``serving_default`` with the given ``(name, dtype)`` inputs and float32 outputs."""
    return Signature(
        "serving_default",
        tuple(TensorSpec(name, dtype, None) for name, dtype in inputs),
        tuple(TensorSpec(name, "float32", None) for name in outputs),
    )


X = sig(("x", "float32"))
AB = sig(("a", "int32"), ("b", "string"))


def decode(body: bytes | str, signature: Signature = X) -> tuple[dict[str, np.ndarray], Format]:
    """A predict body's tensors and format, parsed and decoded for ``signature``."""
    raw = body.encode() if isinstance(body, str) else body
    return json_request.predict_inputs(json_request.loads(raw), signature, max_elements=MAX)


def error(body: bytes | str, signature: Signature = X, kind: type = InvalidArgument) -> str:
    """The message of the error (exactly of type ``kind``) that decoding ``body`` raises."""
    with pytest.raises(ServingError) as info:
        decode(body, signature)
    assert type(info.value) is kind, info.value.message
    return info.value.message
