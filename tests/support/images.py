"""Encoded images made by the tests with Pillow (nothing is downloaded): photo-like pixels
(:func:`photo`), JPEG and PNG encodings, the reference decode (Pillow's own), and hostile files."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image

RESIZE_TOLERANCE = 0
"""Most a resized value may differ from Pillow's own decode + resize: none, the gateway resizes
with Pillow's bilinear filter from the same pixels."""


def photo(width: int, height: int, seed: int = 0, channels: int = 3) -> np.ndarray:
    """A photograph-like scene (sky, ground, a few shaded shapes, texture and noise) drawn from
    ``seed``, ``(height, width, channels)`` uint8 (one channel: gray): smooth areas and edges, as
    JPEG meets them."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    v, u = y / max(height - 1, 1), x / max(width - 1, 1)
    sky, ground = rng.uniform(60, 230, 3), rng.uniform(20, 160, 3)
    horizon = rng.uniform(0.35, 0.65)
    mix = np.clip((v - horizon) * 8 + 0.5, 0, 1)[..., None]
    scene = sky * (1 - mix) * (1 - 0.3 * v[..., None]) + ground * mix
    for _ in range(rng.integers(3, 7)):
        cx, cy, rx, ry = rng.uniform(0, 1), rng.uniform(0.2, 1), *rng.uniform(0.05, 0.25, 2)
        inside = ((u - cx) / rx) ** 2 + ((v - cy) / ry) ** 2
        alpha = np.clip((1.2 - inside) * 4, 0, 1)[..., None]
        shade = 0.75 + 0.25 * np.cos((u - cx) * 9)[..., None]
        scene = scene * (1 - alpha) + rng.uniform(0, 255, 3) * shade * alpha
    texture = 8 * np.sin(x / rng.uniform(2, 6)) * np.cos(y / rng.uniform(2, 6))
    scene += texture[..., None] + rng.normal(0, 6, scene.shape)
    pixels: np.ndarray = np.clip(scene, 0, 255).astype(np.uint8)
    if channels == 1:
        gray: np.ndarray = np.asarray(Image.fromarray(pixels).convert("L"))
        return gray[..., None]
    return pixels


def encode(pixels: np.ndarray, fmt: str = "JPEG", **params: object) -> bytes:
    """``pixels`` (HWC uint8; one channel: grayscale) as a JPEG or PNG file."""
    image = Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels)
    out = io.BytesIO()
    image.save(out, fmt, **params)
    return out.getvalue()


def reference(data: bytes, mode: str = "RGB", size: tuple[int, int] | None = None) -> np.ndarray:
    """Pillow's own decode (``convert(mode)``) and bilinear resize to ``size`` (width, height):
    the pixels the gateway must produce, HWC uint8."""
    with Image.open(io.BytesIO(data)) as image:
        converted = image.convert(mode)
    if size is not None and converted.size != size:
        converted = converted.resize(size, Image.Resampling.BILINEAR)
    array = np.asarray(converted)
    return array.reshape(array.shape[0], array.shape[1], -1)


def truncated_jpeg() -> bytes:
    """A JPEG cut in its scan data (its header whole)."""
    data = encode(photo(256, 192))
    return data[: len(data) * 2 // 3]


def huge_jpeg(width: int = 50_000, height: int = 50_000) -> bytes:
    """A small JPEG whose header (SOF0) declares ``width`` x ``height``."""
    data = encode(photo(16, 16))
    sof = data.index(b"\xff\xc0")
    return data[: sof + 5] + struct.pack(">HH", height, width) + data[sof + 9 :]


def huge_png(width: int = 50_000, height: int = 50_000) -> bytes:
    """A small PNG whose IHDR declares ``width`` x ``height`` (its CRC kept valid)."""
    data = encode(photo(16, 16), "PNG")
    ihdr = data.index(b"IHDR")
    body = struct.pack(">II", width, height) + data[ihdr + 12 : ihdr + 17]
    crc = struct.pack(">I", zlib.crc32(b"IHDR" + body))
    return data[:ihdr] + b"IHDR" + body + crc + data[ihdr + 4 + 13 + 4 :]


def cmyk_jpeg() -> bytes:
    out = io.BytesIO()
    Image.fromarray(photo(32, 24)).convert("CMYK").save(out, "JPEG")
    return out.getvalue()


def png16() -> bytes:
    """A 16-bit grayscale PNG."""
    pixels = (np.arange(32 * 24, dtype=np.uint16).reshape(24, 32) * 80).astype(np.uint16)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def animated_png(frames: int = 3) -> bytes:
    images = [Image.fromarray(photo(32, 24, seed=i)) for i in range(frames)]
    out = io.BytesIO()
    images[0].save(out, "PNG", save_all=True, append_images=images[1:], duration=100)
    return out.getvalue()


HOSTILE = {
    "truncated": (truncated_jpeg, "corrupt or truncated JPEG"),
    "bomb": (huge_jpeg, "over the limit of"),
    "png bomb": (huge_png, "over the limit of"),
    "cmyk": (cmyk_jpeg, "CMYK JPEG"),
    "16-bit png": (png16, "16-bit PNG"),
    "animated png": (animated_png, "animated PNG"),
    "not an image": (lambda: b"GIF89a not what we take", "not a JPEG or PNG image"),
}
"""Each hostile image, and the words its refusal names the rule with."""
