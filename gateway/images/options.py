"""How a model's images become its input values (``image_options.json``), and the bounds every
request's images are held to (the flags).

Without a file, an image input gets the decoded 8-bit values as they are (0–255, RGB),
converted to the input's dtype without scaling. A model version's folder may hold
``image_options.json`` beside ``batching_params.pbtxt``; every image input of that version
gets its options (any key may be left out)::

    {"channel_order": "BGR", "range": [0, 1], "mean": [0.406, 0.456, 0.485],
     "std": [0.225, 0.224, 0.229]}

- ``channel_order``: ``"RGB"`` (default) or ``"BGR"`` (OpenCV's order) for 3-channel inputs;
- ``range``: ``[low, high]``, the values 0–255 mapped linearly onto it (``[0, 1]``: divided by
  255; ``[-1, 1]``: Inception's); default ``[0, 255]``, no scaling;
- ``mean`` and ``std``: then ``(value - mean) / std``, one number for every channel or one per
  channel in the input's channel order (after ``channel_order``); default 0 and 1.

Scaling (``range``, ``mean``, ``std``) needs a floating-point input; the file is checked when
the version loads (a bad one fails the load, FAILED_PRECONDITION) and read again by each front
end when it changes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gateway.config.model_config import ConfigError
from gateway.errors import FailedPrecondition

OPTIONS_FILE: Final = "image_options.json"
CHANNEL_ORDERS: Final = ("RGB", "BGR")
_KEYS: Final = frozenset({"channel_order", "range", "mean", "std"})


@dataclass(frozen=True)
class ImageOptions:
    """One model version's image options (see the module docstring)."""

    channel_order: str = "RGB"
    value_range: tuple[float, float] = (0.0, 255.0)
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)

    @property
    def scales(self) -> bool:
        """Whether values change besides their dtype (range, mean or std set)."""
        return (
            self.value_range != (0.0, 255.0)
            or any(m != 0.0 for m in self.mean)
            or any(s != 1.0 for s in self.std)
        )

    @classmethod
    def from_json(cls, document: Any, where: str) -> ImageOptions:
        """The options of a parsed ``image_options.json``; ConfigError naming ``where`` and
        the key at fault."""
        if not isinstance(document, dict):
            raise ConfigError(f"{where}: expected a JSON object")
        unknown = sorted(set(document) - _KEYS)
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}"
            )
        order = document.get("channel_order", "RGB")
        if order not in CHANNEL_ORDERS:
            raise ConfigError(f"{where}: channel_order must be RGB or BGR, got {order!r}")
        value_range = _numbers(document, "range", where, (0.0, 255.0))
        if len(value_range) != 2 or value_range[0] == value_range[1]:
            raise ConfigError(f"{where}: range must be [low, high] with low != high")
        mean = _numbers(document, "mean", where, (0.0,))
        std = _numbers(document, "std", where, (1.0,))
        if any(s == 0.0 for s in std):
            raise ConfigError(f"{where}: std must not be 0")
        return cls(order, (value_range[0], value_range[1]), mean, std)

    def check(self, channels: int, floating: bool, where: str) -> None:
        """ConfigError unless these options fit an input of ``channels`` channels, of a
        floating-point dtype or not (scaling needs one; mean/std: one value or one a channel)."""
        if self.scales and not floating:
            raise ConfigError(
                f"{where}: range, mean and std need a floating-point input; this one's values "
                "are integers"
            )
        for key, values in (("mean", self.mean), ("std", self.std)):
            if len(values) not in (1, channels):
                raise ConfigError(
                    f"{where}: {key} has {len(values)} values for an input of {channels} channels"
                )


def is_floating(dtype_name: str) -> bool:
    """Whether a canonical dtype name (:mod:`channel.dtypes`) is a floating-point one."""
    return dtype_name in _FLOATING


_FLOATING: Final = frozenset({"float16", "bfloat16", "float32", "float64"})


def _numbers(
    document: Mapping[str, Any], key: str, where: str, default: tuple[float, ...]
) -> tuple[float, ...]:
    value = document.get(key)
    if value is None:
        return default
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
        raise ConfigError(f"{where}: {key} must be a number or a list of numbers, got {value!r}")
    return tuple(float(v) for v in items)


def read_options(version_dir: str) -> ImageOptions:
    """``<version_dir>/image_options.json`` when present, else the defaults; ConfigError for
    a file that cannot be read or breaks the rules."""
    path = os.path.join(version_dir, OPTIONS_FILE)
    try:
        with open(path, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        return ImageOptions()
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from None
    return ImageOptions.from_json(document, path)


def check_version(model: str, version: int, version_dir: str) -> None:
    """Fail a version's load early (FailedPrecondition) when its ``image_options.json`` is
    invalid (the fit of its options to each image input is checked per request)."""
    try:
        read_options(version_dir)
    except ConfigError as exc:
        raise FailedPrecondition(str(exc)) from None


@dataclass(frozen=True)
class ImageLimits:
    """The bounds of one request's images: ``max_pixels`` per image (``--max_image_pixels``),
    ``max_images`` per request (``--max_images_per_request``), and ``max_bytes`` of decoded
    input tensors (``--max_request_bytes``; None: no bound)."""

    max_pixels: int = 1 << 25
    max_images: int = 256
    max_bytes: int | None = None
