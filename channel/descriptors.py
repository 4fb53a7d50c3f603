"""How messages name tensors: in a shared-memory area (:class:`TensorDesc`) or in a model's
signature (:class:`WireTensorSpec`, :class:`WireSignature`).

A :class:`TensorDesc` names a payload of :mod:`channel.shm.payload` in the input or output area::

    TensorDesc(name="x", dtype="float32", shape=(8, 64), offset=4096, nbytes=2048)

``dtype`` is a canonical name of :mod:`channel.dtypes`. Descriptors travel only inside the binary
``run`` messages (:mod:`channel.wire`), so they are named tuples, not JSON objects; the hot paths
read them positionally and make them with ``tuple.__new__(TensorDesc, (...))``, which runs no
Python code (``TensorDesc(...)`` runs the generated ``__new__``).
"""

from __future__ import annotations

from typing import NamedTuple, TypedDict


class TensorDesc(NamedTuple):
    """A tensor in a shared-memory area: ``offset`` and ``nbytes`` are in bytes from the area's
    start; ``shape`` is fully known (no -1)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int


class WireTensorSpec(TypedDict):
    """A signature entry: ``shape`` has -1 for dynamic dimensions; None is an unknown rank."""

    name: str
    dtype: str
    shape: list[int] | None


class WireSignature(TypedDict):
    """A single-signature model's inputs and outputs (an ONNX ``load`` reply's ``"signature"``)."""

    inputs: list[WireTensorSpec]
    outputs: list[WireTensorSpec]
