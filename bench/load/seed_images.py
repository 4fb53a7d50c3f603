"""The images the seeds' test sends: a fixed set of photograph-like JPEGs made here (numpy and
Pillow, nothing downloaded), at the model's 224 × 224 and at 1000 × 750, which the server must
resize.

Each image is a scene of its own seed: a sky-to-ground gradient, a few soft-edged objects of
random colour, fine texture and sensor noise, encoded at JPEG quality 90 with 4:2:0 chroma
(a camera's usual output) — about 20 KB at 224 × 224 and 200 KB at 1000 × 750.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

SIZES = {"224x224": (224, 224), "1000x750": (1000, 750)}
"""Name → (width, height) of the two sets."""
PER_SIZE = 8
QUALITY = 90


def photo(width: int, height: int, seed: int = 0, channels: int = 3) -> np.ndarray:
    """A photograph-like scene, ``(height, width, channels)`` uint8 (one channel: gray)."""
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


def jpegs(size: str, count: int = PER_SIZE) -> list[bytes]:
    """The set of one size (a name of :data:`SIZES`): ``count`` JPEGs, seeds 0…count-1."""
    width, height = SIZES[size]
    out = []
    for seed in range(count):
        buffer = io.BytesIO()
        Image.fromarray(photo(width, height, seed)).save(buffer, "JPEG", quality=QUALITY)
        out.append(buffer.getvalue())
    return out


def write(folder: Path, size: str, count: int = PER_SIZE) -> list[Path]:
    """Write the set of one size into ``folder`` (``<size>-<seed>.jpg``); the files."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for seed, data in enumerate(jpegs(size, count)):
        path = folder / f"{size}-{seed}.jpg"
        path.write_bytes(data)
        paths.append(path)
    return paths
