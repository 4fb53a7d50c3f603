"""One request's input tensors as a protocol's codec hands them to the core, and the one
validation they get there.

A codec only bounds sizes and converts (:class:`Decoded`); the core validates names, dtypes and
shapes against the signature once (:func:`validated`), from what each tensor *declares*, before a
single value is converted — so a request that does not fit its signature never expands its
values, and the arrays the codec then converts are known to fit.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping
from typing import Final, Protocol

import numpy as np

from channel.dtypes import dtype_name, numpy_dtype
from gateway.errors import InvalidArgument
from gateway.serving.signature import Signature

Header = tuple[str, str, tuple[int, ...]]
"""One input's name, canonical dtype name (:mod:`channel.dtypes`) and shape."""
Arrays = dict[str, np.ndarray]


class ExpectedInput:
    """One input exactly as a compiled signature expects it: its name, dtype, and the dims past
    the first (fixed)."""

    __slots__ = ("dtype", "dtype_name", "name", "tail", "tail_elements")

    def __init__(self, name: str, dtype_name: str, tail: tuple[int, ...]) -> None:
        self.name = name
        self.dtype_name = dtype_name
        self.dtype = numpy_dtype(dtype_name)
        self.tail = tail
        self.tail_elements = math.prod(tail)


class Expected(Protocol):
    """A signature compiled for one check (:class:`~gateway.serving.inline_path.InlinePlan`):
    its inputs, and :meth:`matches`."""

    @property
    def inputs(self) -> tuple[ExpectedInput, ...]: ...

    def matches(self, arrays: Arrays) -> int:
        """The rows of ``arrays`` when they are exactly these inputs (names, dtypes, dims past
        the first) with as many rows each; else -1."""
        ...


class Decoded(Protocol):
    """One request's inputs as a codec read them.

    ``names``: the input names the request carries (cheap: no tensor is read). ``headers()``
    yields each input's declared dtype and shape, checking the codec's own bounds (element
    counts, the request's decoded bytes: INVALID_ARGUMENT / RESOURCE_EXHAUSTED) as it goes; a
    bound on the whole request is checked after the last header. ``arrays()`` converts the
    values, called only once every header has been validated; each array has exactly its
    header's dtype and shape.
    """

    @property
    def names(self) -> Collection[str]: ...

    def headers(self) -> Iterator[Header]: ...

    def arrays(self) -> dict[str, np.ndarray]: ...

    def fast_arrays(self, expected: Expected) -> tuple[Arrays, int] | None:
        """The arrays and their rows when the request is exactly ``expected`` (and within the
        codec's bounds), read straight from the wire form; None when it is anything else (the
        one validation then says what, :func:`validated`). Arrays returned here would pass it."""
        ...


class ConvertedInputs:
    """Inputs already converted (REST JSON, whose shapes are known only once parsed; a
    tf.Example batch's features): the headers are the arrays' own."""

    __slots__ = ("_arrays",)

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self._arrays = arrays

    @property
    def names(self) -> Collection[str]:
        return self._arrays.keys()

    def headers(self) -> Iterator[Header]:
        for name, array in self._arrays.items():
            yield name, dtype_name(array.dtype), array.shape

    def arrays(self) -> dict[str, np.ndarray]:
        return self._arrays

    def fast_arrays(self, expected: Expected) -> tuple[Arrays, int] | None:
        rows = expected.matches(self._arrays)
        return None if rows < 0 else (self._arrays, rows)


def validated(
    signature: Signature, decoded: Decoded, *, check_dtypes: bool = True
) -> dict[str, np.ndarray]:
    """The request's arrays, once its names, then each input's dtype (with ``check_dtypes``) and
    shape, fit ``signature``; InvalidArgument (TF Serving's texts) naming what does not."""
    signature.check_input_names(decoded.names)
    for name, dtype, shape in decoded.headers():
        signature.check_input(name, dtype, shape, check_dtype=check_dtypes)
    return decoded.arrays()


TEXT_PLATFORMS: Final = frozenset({"onnx"})
"""Platforms whose runtime takes string tensors as text: ONNX Runtime's Python API reads a
``bytes`` element as its ``repr``, so the worker decodes strings as UTF-8 before the run
(``workers/tensors.read_input``). TensorFlow takes bytes as they are."""


def check_text(inputs: Mapping[str, np.ndarray]) -> None:
    """INVALID_ARGUMENT for the first string input with an element that is not UTF-8 (the
    worker's own text). Run per request before it is queued, so a bad value fails only its own
    request, never the batch it would join."""
    for name, array in inputs.items():
        if array.dtype.kind != "O":
            continue
        for item in array.ravel().tolist():
            if isinstance(item, bytes) and not item.isascii():
                try:
                    item.decode()
                except UnicodeDecodeError:
                    raise InvalidArgument(f"string input {name!r} is not valid UTF-8") from None


def carries_images(signature: Signature, inputs: Mapping[str, np.ndarray]) -> bool:
    """Whether validated ``inputs`` give one of the signature's image inputs encoded images (a
    string tensor, which :meth:`Signature.check_input` let through): the core then has them
    decoded (:mod:`gateway.images`) before the request is queued."""
    for name in signature.image_inputs:  # noqa: SIM110  # no generator per call
        if inputs[name].dtype.hasobject:
            return True
    return False


def converted_inputs(arrays: Mapping[str, np.ndarray]) -> ConvertedInputs:
    """The :class:`ConvertedInputs` of ``arrays`` (the mapping copied)."""
    return ConvertedInputs(dict(arrays))
