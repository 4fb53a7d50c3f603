"""A request's encoded images → its image inputs' tensors (a pure function, run off the loop by
:mod:`gateway.images.decoder`).

An image input is numeric, NHWC ``[batch, height, width, channels]`` with 1 or 3 channels; the
request gives it a string tensor ``[batch]`` holding one JPEG or PNG per row (the signature's
rule: :attr:`gateway.serving.signature.Signature.image_inputs`). For each such input:

1. every image's header is read first (:func:`gateway.images.codecs.read_header`), so a bad or
   oversized image fails the request before anything is decoded; the request may carry at most
   ``max_images`` images in all (``--max_images_per_request``);
2. the tensor's size: with a static height and width, every image is resized to them (Pillow's
   bilinear filter, as ``Image.resize(..., BILINEAR)``; none when the size already fits); with
   a dynamic height or width, no image is resized, the request's images must share one size,
   and a static dimension must fit it. The tensors of the whole request are bounded by
   ``max_bytes`` (``--max_request_bytes``, RESOURCE_EXHAUSTED) before any pixel is decoded;
3. each image is decoded (RGB, or luminance for one channel), put in ``channel_order``, and its
   0–255 values converted to the input's dtype — exactly, or through the model's ``range``,
   ``mean`` and ``std`` (:mod:`gateway.images.options`).

Refusals are INVALID_ARGUMENT naming the input, the row and the rule, e.g. ``input 'images'
image 1 is a CMYK JPEG: only RGB (YCbCr) and grayscale images are decoded``; only the request
that carries the image fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from PIL import Image

from channel.dtypes import numpy_dtype
from gateway.config.model_config import ConfigError
from gateway.decoding import check_total
from gateway.errors import FailedPrecondition, InvalidArgument
from gateway.images.codecs import ImageHeader, ImageRefused, decode, read_header
from gateway.images.options import OPTIONS_FILE, ImageLimits, ImageOptions, is_floating


class ImageInput(Protocol):
    """A signature input that takes images (``gateway.serving.signature.TensorSpec`` is one):
    its name, canonical dtype name and NHWC shape (``-1``: dynamic)."""

    @property
    def name(self) -> str: ...

    @property
    def dtype(self) -> str: ...

    @property
    def shape(self) -> tuple[int, ...] | None: ...


def decode_inputs(
    specs: Iterable[ImageInput],
    inputs: Mapping[str, np.ndarray],
    options: ImageOptions,
    limits: ImageLimits,
) -> dict[str, np.ndarray]:
    """``inputs`` with each image input given strings (an object array) replaced by the tensor
    of its images; other inputs as they are. See the module docstring for the rules."""
    plans: list[_Plan] = []
    images = 0
    total = sum(a.nbytes for a in inputs.values() if not a.dtype.hasobject)
    for spec in specs:
        array = inputs.get(spec.name)
        if array is None or not array.dtype.hasobject:
            continue
        items: list[bytes] = array.ravel().tolist()
        images += len(items)
        if images > limits.max_images:
            raise InvalidArgument(
                f"the request carries {images} or more images, over the limit of "
                f"{limits.max_images} per request (--max_images_per_request)"
            )
        plan = _plan(spec, items, limits.max_pixels)
        total += plan.nbytes
        plans.append(plan)
    check_total(total, limits.max_bytes)
    decoded = dict(inputs)
    for plan in plans:
        decoded[plan.name] = plan.run(options)
    return decoded


class _Plan:
    """One input's images, their headers read, and the tensor they make."""

    def __init__(
        self,
        name: str,
        items: list[bytes],
        headers: list[ImageHeader],
        shape: tuple[int, int, int, int],
        dtype: np.dtype[Any],
        floating: bool,
    ) -> None:
        self.name = name
        self.floating = floating
        self.items = items
        self.headers = headers
        self.shape = shape
        self.dtype = dtype
        self.nbytes = int(np.prod(shape)) * dtype.itemsize

    def run(self, options: ImageOptions) -> np.ndarray:
        _, height, width, channels = self.shape
        try:
            options.check(channels, self.floating, OPTIONS_FILE)
        except ConfigError as exc:
            raise FailedPrecondition(f"input '{self.name}': {exc}") from None
        out = np.empty(self.shape, self.dtype)
        convert = _converter(options, self.dtype)
        for row, (item, header) in enumerate(zip(self.items, self.headers, strict=True)):
            try:
                pixels = decode(item, header, channels)
            except ImageRefused as exc:
                raise InvalidArgument(f"input '{self.name}' image {row} {exc}") from None
            if pixels.shape[:2] != (height, width):
                pixels = _resized(pixels, height, width)
            if options.channel_order == "BGR" and channels == 3:
                pixels = pixels[:, :, ::-1]
            out[row] = convert(pixels)
        return out


def _plan(spec: ImageInput, items: list[bytes], max_pixels: int) -> _Plan:
    shape = spec.shape
    if shape is None or len(shape) != 4:  # the signature's rule lets only NHWC inputs here
        raise InvalidArgument(f"input '{spec.name}' is not an NHWC image input")
    headers = []
    for row, item in enumerate(items):
        try:
            headers.append(read_header(item, max_pixels))
        except ImageRefused as exc:
            raise InvalidArgument(f"input '{spec.name}' image {row} {exc}") from None
    _, height, width, channels = shape
    if height < 0 or width < 0:
        height, width = _shared_size(spec.name, headers, height, width)
    dims = (len(items), height, width, channels)
    return _Plan(spec.name, items, headers, dims, numpy_dtype(spec.dtype), is_floating(spec.dtype))


def _shared_size(
    name: str, headers: Sequence[ImageHeader], height: int, width: int
) -> tuple[int, int]:
    """The size of a request's images for an input with a dynamic height or width: the images
    are not resized, so they must share one size, and fit a static dimension."""
    if not headers:
        return max(height, 0), max(width, 0)
    first = headers[0]
    for row, header in enumerate(headers):
        if (header.height, header.width) != (first.height, first.width):
            raise InvalidArgument(
                f"input '{name}' image {row} is {header.width}x{header.height} but image 0 is "
                f"{first.width}x{first.height}: with a dynamic height or width the images of one "
                "request are not resized and must share a size"
            )
    for what, static, got in (("height", height, first.height), ("width", width, first.width)):
        if static >= 0 and static != got:
            raise InvalidArgument(
                f"input '{name}' takes images of {what} {static} and its other dimension is "
                f"dynamic, so images are not resized; image 0's {what} is {got}"
            )
    return first.height, first.width


def _resized(pixels: npt.NDArray[np.uint8], height: int, width: int) -> npt.NDArray[np.uint8]:
    """Pillow's bilinear resize (``Image.resize((width, height), BILINEAR)``)."""
    channels = pixels.shape[2]
    image = Image.fromarray(pixels[:, :, 0] if channels == 1 else pixels)
    resized = np.asarray(image.resize((width, height), Image.Resampling.BILINEAR))
    return resized.reshape(height, width, channels)


def _converter(
    options: ImageOptions, dtype: np.dtype[Any]
) -> Callable[[npt.NDArray[np.uint8]], np.ndarray]:
    """pixels (uint8) → values of ``dtype``: a plain conversion, or the model's scaling (in
    float32, or float64 for a float64 input)."""
    if not options.scales:
        return lambda pixels: pixels.astype(dtype)
    math = np.dtype(np.float64 if dtype.itemsize > 4 else np.float32)
    low, high = options.value_range
    step = np.asarray((high - low) / 255.0, math)
    offset = np.asarray(low, math)
    mean = np.asarray(options.mean, math)
    std = np.asarray(options.std, math)

    def scaled(pixels: npt.NDArray[np.uint8]) -> np.ndarray:
        values: np.ndarray = pixels.astype(math) * step + offset
        result: np.ndarray = ((values - mean) / std).astype(dtype)
        return result

    return scaled
