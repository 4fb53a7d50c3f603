"""One encoded image → its header, then its pixels: JPEG through libjpeg-turbo (simplejpeg), PNG
through Pillow, 8 bits a channel.

:func:`read_header` reads what the image declares, without decoding a pixel, and refuses (an
:class:`ImageRefused` naming the rule; the caller says which input and row):

- data that is neither a JPEG (``FF D8 FF``) nor a PNG (its 8-byte signature);
- more than ``max_pixels`` pixels (width × height, ``--max_image_pixels``): a 50,000 × 50,000
  header is refused before anything is allocated;
- a CMYK or YCCK JPEG; a PNG of 16 bits a channel; an animated PNG (an ``acTL`` chunk with
  more than one frame).

:func:`decode` then decodes it into ``channels`` (3: RGB; 1: luminance), refusing corrupt or
truncated data (libjpeg-turbo's warnings count as errors). A grayscale image feeds a 3-channel
input replicated (as Pillow's ``convert("RGB")``); a colour image feeds a 1-channel input as
Pillow's ``convert("L")`` (ITU-R 601-2 luma); a PNG's alpha is dropped, not composited, and a
palette expanded. The pixels are exactly Pillow's ``Image.open(data).convert(mode)``.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import simplejpeg
from PIL import Image

JPEG: Final = "JPEG"
PNG: Final = "PNG"
_JPEG_MAGIC: Final = b"\xff\xd8\xff"
_PNG_MAGIC: Final = b"\x89PNG\r\n\x1a\n"
_CHUNK = struct.Struct(">I4s")
_IHDR = struct.Struct(">IIBB")
_ACTL_FRAMES = struct.Struct(">I")
_JPEG_COLOUR: Final = frozenset({"YCbCr", "RGB"})
_JPEG_GRAY: Final = "Gray"
_PNG_GRAY_TYPES: Final = frozenset({0, 4})
"""PNG colour types without colour: grayscale, grayscale with alpha."""


class ImageRefused(ValueError):
    """An image that breaks one of the module's rules; the message names it."""


@dataclass(frozen=True)
class ImageHeader:
    """What an image declares: its format, size in pixels, and whether it has no colour."""

    format: str
    width: int
    height: int
    gray: bool


def read_header(data: bytes, max_pixels: int) -> ImageHeader:
    """The image's header, or ImageRefused (see the module docstring) — nothing is decoded."""
    if data.startswith(_JPEG_MAGIC):
        header = _jpeg_header(data)
    elif data.startswith(_PNG_MAGIC):
        header = _png_header(data)
    else:
        raise ImageRefused(f"is not a JPEG or PNG image (it starts with {bytes(data[:8])!r})")
    pixels = header.width * header.height
    if pixels > max_pixels:
        raise ImageRefused(
            f"is a {header.width}x{header.height} {header.format} ({pixels} pixels), over the "
            f"limit of {max_pixels} pixels per image (--max_image_pixels)"
        )
    if pixels == 0:
        raise ImageRefused(f"is a {header.width}x{header.height} {header.format}: it has no pixels")
    return header


def decode(data: bytes, header: ImageHeader, channels: int) -> npt.NDArray[np.uint8]:
    """The pixels of an image :func:`read_header` accepted: ``(height, width, channels)``
    uint8, ``channels`` 3 (RGB) or 1 (luminance). ImageRefused for corrupt or truncated data."""
    if header.format == JPEG:
        return _decode_jpeg(data, header, channels)
    return _decode_png(data, channels)


def _jpeg_header(data: bytes) -> ImageHeader:
    try:
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(data)
    except ValueError as exc:
        raise ImageRefused(f"is a corrupt or truncated JPEG ({exc})") from None
    if colorspace not in _JPEG_COLOUR and colorspace != _JPEG_GRAY:
        raise ImageRefused(
            f"is a {colorspace} JPEG: only RGB (YCbCr) and grayscale images are decoded"
        )
    return ImageHeader(JPEG, int(width), int(height), colorspace == _JPEG_GRAY)


def _decode_jpeg(data: bytes, header: ImageHeader, channels: int) -> npt.NDArray[np.uint8]:
    colorspace = "GRAY" if channels == 1 and header.gray else "RGB"
    try:
        pixels: npt.NDArray[np.uint8] = simplejpeg.decode_jpeg(data, colorspace=colorspace)
    except ValueError as exc:  # strict: libjpeg-turbo's warnings (a premature end) too
        raise ImageRefused(f"is a corrupt or truncated JPEG ({exc})") from None
    if channels == 1 and not header.gray:
        luma = Image.fromarray(pixels, "RGB").convert("L")
        return np.asarray(luma)[:, :, np.newaxis]
    return pixels


def _png_header(data: bytes) -> ImageHeader:
    """The IHDR's size, depth and colour type, and the chunks before the first IDAT (an
    animated PNG says so in an ``acTL`` chunk there)."""
    offset = len(_PNG_MAGIC)
    ihdr: tuple[int, int, int, int] | None = None
    while offset + _CHUNK.size <= len(data):
        length, kind = _CHUNK.unpack_from(data, offset)
        body = offset + _CHUNK.size
        if body + length > len(data):
            break
        if kind == b"IHDR" and length >= _IHDR.size:
            ihdr = _IHDR.unpack_from(data, body)
        elif kind == b"acTL" and length >= _ACTL_FRAMES.size:
            (frames,) = _ACTL_FRAMES.unpack_from(data, body)
            if frames > 1:
                raise ImageRefused(f"is an animated PNG ({frames} frames): send one frame")
        elif kind == b"IDAT":
            break
        offset = body + length + 4  # the chunk's CRC
    if ihdr is None:
        raise ImageRefused("is a corrupt or truncated PNG (no IHDR chunk)")
    width, height, depth, colour_type = ihdr
    if depth > 8:
        raise ImageRefused(f"is a {depth}-bit PNG: only images of 8 bits a channel are decoded")
    return ImageHeader(PNG, width, height, colour_type in _PNG_GRAY_TYPES)


def _decode_png(data: bytes, channels: int) -> npt.NDArray[np.uint8]:
    try:
        with Image.open(io.BytesIO(data), formats=[PNG]) as image:
            image.load()
            pixels = _converted(image, channels)
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        raise ImageRefused(f"is a corrupt or truncated PNG ({exc})") from None
    return pixels.reshape(pixels.shape[0], pixels.shape[1], channels)


def _converted(image: Image.Image, channels: int) -> npt.NDArray[np.uint8]:
    mode = "L" if channels == 1 else "RGB"
    if image.mode in ("P", "PA") and "transparency" in image.info:
        image = image.convert("RGBA")  # Pillow's own path for a palette with transparency
    array: Any = np.asarray(image if image.mode == mode else image.convert(mode))
    return np.ascontiguousarray(array, dtype=np.uint8)
