"""Signatures of served models and validation of requests against them.

A signature names its input and output tensors with a canonical dtype name (``"float32"``, ...,
see ``channel.dtypes``) and a shape where ``-1`` is a dynamic dimension and ``None`` an unknown
rank. Validation runs before anything is queued, so a malformed request fails alone. Shapes are
checked only where the runtime enforces them (``check_shapes``): TensorFlow signatures take any
shape, as in TF Serving, and the graph's ops decide.

Encoded images (OpenVINO Model Server's rule): in a signature with ``encoded_images`` (an ONNX
model's, on ONNX Runtime or OpenVINO: :data:`IMAGE_PLATFORMS`), an image input — numeric, of
shape ``[batch, height, width, channels]`` with 1 or 3 channels (:func:`takes_images`) — also
takes a string tensor of shape ``[batch]``, one JPEG or PNG per row, which the core decodes
into the input's own dtype and shape (:mod:`gateway.images`) before the request is queued.
"""

from __future__ import annotations

import base64
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from channel.messages import DEFAULT_SIGNATURE as DEFAULT_SIGNATURE  # re-exported
from gateway.errors import FailedPrecondition, InvalidArgument

PREDICT_METHOD = "tensorflow/serving/predict"
STRING = "string"

IMAGE_PLATFORMS = frozenset({"onnx"})
"""Platforms whose signatures take encoded images (``encoded_images``): ONNX models, whichever
runtime serves them (ONNX Runtime or OpenVINO). A TensorFlow model decodes its own images in
its graph (``tf.io.decode_image``), as with TF Serving."""

_IMAGE_DTYPES = frozenset(
    {
        "float16", "bfloat16", "float32", "float64",
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    }
)  # fmt: skip


@dataclass(frozen=True)
class TensorSpec:
    """One signature tensor: its alias, canonical dtype name and shape (``None`` = unknown rank)."""

    name: str
    dtype: str
    shape: tuple[int, ...] | None
    tensor_name: str = ""
    """The graph tensor behind the alias (TF: ``x:0``); empty when it is the alias itself."""

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> TensorSpec:
        shape = data.get("shape")
        return cls(
            name=str(data["name"]),
            dtype=str(data["dtype"]),
            shape=None if shape is None else tuple(int(d) for d in shape),
            tensor_name=str(data.get("tensor_name", "")),
        )


@dataclass(frozen=True)
class Signature:
    """A named signature: ordered inputs and outputs, and its TF Serving method name."""

    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    method_name: str = PREDICT_METHOD
    check_shapes: bool = True
    """Refuse inputs whose shape contradicts the signature's. False for TensorFlow: a
    SignatureDef's shapes document, TF Serving feeds any shape (its own tests feed ``x`` of shape
    [1] to half_plus_two's [-1, 1] input) and the graph's ops decide."""
    unservable: str = ""
    """Why this signature is listed in the metadata but cannot be run ("" when it can)."""
    definition: bytes = b""
    """The serialized SignatureDef as the model declares it, for a signature that the inputs and
    outputs above cannot describe (an ``unservable`` one); empty otherwise."""
    encoded_images: bool = False
    """Whether its image inputs also take encoded images (see the module docstring)."""
    image_inputs: frozenset[str] = field(init=False, compare=False)
    """The inputs that take encoded images: :func:`takes_images` ones, when ``encoded_images``."""
    _inputs_by_name: dict[str, TensorSpec] = field(init=False, repr=False, compare=False)
    _input_set: frozenset[str] = field(init=False, repr=False, compare=False)
    _output_names: list[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_inputs_by_name", {t.name: t for t in self.inputs})
        object.__setattr__(self, "_input_set", frozenset(self._inputs_by_name))
        object.__setattr__(self, "_output_names", [t.name for t in self.outputs])
        images = {t.name for t in self.inputs if takes_images(t)} if self.encoded_images else ()
        object.__setattr__(self, "image_inputs", frozenset(images))

    @classmethod
    def from_wire(
        cls,
        name: str,
        data: Mapping[str, Any],
        *,
        check_shapes: bool = True,
        encoded_images: bool = False,
    ) -> Signature:
        """Build from a worker's ``load`` reply (``{"inputs": [...], "outputs": [...]}``, and
        for an unservable signature ``"unservable"`` and ``"definition"``, base64)."""
        return cls(
            name=name,
            inputs=tuple(TensorSpec.from_wire(t) for t in data["inputs"]),
            outputs=tuple(TensorSpec.from_wire(t) for t in data["outputs"]),
            method_name=str(data.get("method_name", PREDICT_METHOD)),
            check_shapes=check_shapes,
            unservable=str(data.get("unservable", "")),
            definition=base64.b64decode(data.get("definition", "")),
            encoded_images=encoded_images,
        )

    def image_specs(self) -> tuple[TensorSpec, ...]:
        """The inputs that take encoded images (:attr:`image_inputs`), in order."""
        return tuple(t for t in self.inputs if t.name in self.image_inputs)

    def output_names(self) -> list[str]:
        """The outputs' aliases, in order (the caller's own list)."""
        return list(self._output_names)

    def check_input_names(self, names: Collection[str]) -> None:
        """InvalidArgument (TF Serving's text) unless ``names`` are exactly the inputs'."""
        expected = self._inputs_by_name
        if self._input_set != set(names):
            extra = sorted(set(names) - set(expected))
            missing = sorted(set(expected) - set(names))
            raise InvalidArgument(
                f"input size does not match signature: {len(names)}!={len(expected)} "
                f"len({{{_join(sorted(names))}}}) != len({{{_join(sorted(expected))}}}). "
                f"Sent extra: {{{_join(extra)}}}. Missing but required: {{{_join(missing)}}}."
            )

    def check_input(
        self, name: str, dtype: str, shape: Sequence[int], *, check_dtype: bool = True
    ) -> None:
        """InvalidArgument unless input ``name`` (a known input) may have this canonical dtype
        and shape. Codecs call it with a tensor's *declared* dtype and shape, before decoding.
        A string tensor for an image input must be ``[batch]`` (see the module docstring)."""
        spec = self._inputs_by_name[name]
        if check_dtype and dtype != spec.dtype:
            if dtype == STRING and name in self.image_inputs:
                _check_encoded_images(spec, shape)
                return
            raise DtypeMismatch.of(name, dtype, spec.dtype)
        if self.check_shapes and spec.shape is not None and not shape_matches(shape, spec.shape):
            raise InvalidArgument(
                f"input '{name}' has shape {list(shape)} but the signature expects "
                f"{list(spec.shape)} (-1 = any size)"
            )

    def select_outputs(self, output_filter: Sequence[str]) -> list[str]:
        """Output aliases to compute: all of them when the filter is empty (a list the caller
        must not change)."""
        names = self._output_names
        if not output_filter:
            return names
        seen: set[str] = set()
        for alias in output_filter:
            if alias not in names:
                raise InvalidArgument(
                    f"output tensor alias not found in signature: {alias} "
                    f"Outputs expected to be in the set {{{_join(names)}}}."
                )
            if alias in seen:
                raise InvalidArgument(f"duplicate output tensor alias: {alias}")
            seen.add(alias)
        return list(output_filter)


def takes_images(spec: TensorSpec) -> bool:
    """Whether ``spec`` is an image input: numeric, ``[batch, height, width, channels]`` with
    1 or 3 channels (height and width may be dynamic)."""
    shape = spec.shape
    return (
        spec.dtype in _IMAGE_DTYPES and shape is not None and len(shape) == 4 and shape[3] in (1, 3)
    )


def _check_encoded_images(spec: TensorSpec, shape: Sequence[int]) -> None:
    batch = spec.shape[0] if spec.shape else -1
    if len(shape) != 1 or (batch >= 0 and shape[0] != batch):
        rows = "[batch]" if batch < 0 else f"[{batch}]"
        raise InvalidArgument(
            f"input '{spec.name}' takes encoded images as a string tensor of shape {rows} (one "
            f"JPEG or PNG per row), got shape {list(shape)}"
        )


def shape_matches(shape: Sequence[int], expected: Sequence[int]) -> bool:
    """True when ranks agree and every fixed (non ``-1``) dimension is equal."""
    if len(shape) != len(expected):
        return False
    for size, want in zip(shape, expected, strict=True):  # noqa: SIM110  # no generator per call
        if want >= 0 and size != want:
            return False
    return True


def find_signature(signatures: Mapping[str, Signature], name: str) -> Signature:
    """Look up a signature to run; an empty name means ``serving_default`` (TF Serving's rule).
    FailedPrecondition when there is none, InvalidArgument when it is ``unservable``."""
    key = name or DEFAULT_SIGNATURE
    signature = signatures.get(key)
    if signature is None:
        raise FailedPrecondition(f'Serving signature key "{key}" not found.')
    if signature.unservable:
        raise InvalidArgument(f'Signature "{key}" cannot be run: {signature.unservable}')
    return signature


class DtypeMismatch(InvalidArgument):
    """An input whose declared dtype is not its signature's (TF Serving's text). ``name``,
    ``got`` and ``expected`` (canonical dtype names; "" when only the message is known) let a
    protocol say it with its own dtype names, from the one validation
    (:func:`gateway.serving.inputs.validated`). Constructed as any ServingError (a message and
    a code), or with :meth:`of`."""

    name = ""
    got = ""
    expected = ""

    @classmethod
    def of(cls, name: str, got: str, expected: str) -> DtypeMismatch:
        error = cls(f"input '{name}' has dtype {got} but the signature expects {expected}")
        error.name, error.got, error.expected = name, got, expected
        return error


def _join(names: Iterable[str]) -> str:
    return ",".join(names)
