"""One V2 inference call as plain data: what the request names, before any tensor is decoded.

Both wire forms produce an :class:`InferCall` first (model, version, id, options, requested
outputs), so that the adapter can look the model and signature up before the inputs are decoded
for that signature: an unknown model is NOT_FOUND however bad the tensors are.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.v2.parameters import RequestOptions
from gateway.v2.version_strings import Target

MICROS = 1e-6


@dataclass(frozen=True)
class RequestedOutput:
    """An output the request asks for, and (REST) whether it wants it as binary data."""

    name: str
    binary: bool | None = None
    """The output's ``binary_data`` parameter; None: the request's ``binary_data_output``."""


@dataclass(frozen=True)
class InferCall:
    """The header of one inference request."""

    target: Target
    id: str
    """The request's ``id`` ("" when none); echoed in the response."""
    options: RequestOptions
    outputs: tuple[RequestedOutput, ...] = ()
    """Empty: every output of the signature."""

    def output_filter(self) -> list[str]:
        """The requested output names, in order, each once (the core's ``output_filter``, which
        refuses duplicates as TF Serving does; Triton answers a name requested twice once)."""
        return list(dict.fromkeys(output.name for output in self.outputs))

    def binary_outputs(self, names: list[str]) -> set[str]:
        """Which of ``names`` (the outputs computed) go back as binary data (REST): an output's
        own ``binary_data`` flag, else the request's ``binary_data_output``."""
        flags = {output.name: output.binary for output in self.outputs}
        default = self.options.binary_data_output
        return {name for name in names if (default if flags.get(name) is None else flags[name])}

    def deadline(self, now: float, transport_deadline: float | None) -> float | None:
        """The call's deadline in the transport's clock (``now`` in seconds on that clock): the
        ``timeout`` parameter tightens the transport's deadline, never loosens it."""
        timeout_us = self.options.timeout_us
        if timeout_us is None:
            return transport_deadline
        own = now + timeout_us * MICROS
        return own if transport_deadline is None else min(own, transport_deadline)
