"""One image's header and pixels against Pillow's own decode, and the refusals of each rule."""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image

from gateway.images.codecs import ImageRefused, decode, read_header
from tests.support import images

LIMIT = 1 << 25


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
@pytest.mark.parametrize("stored", [1, 3])
@pytest.mark.parametrize("channels", [1, 3])
def test_pixels_are_pillows_own_decode(fmt: str, stored: int, channels: int) -> None:
    data = images.encode(images.photo(40, 30, channels=stored), fmt)
    header = read_header(data, LIMIT)
    assert (header.format, header.width, header.height, header.gray) == (fmt, 40, 30, stored == 1)
    pixels = decode(data, header, channels)
    assert pixels.dtype == np.uint8 and pixels.shape == (30, 40, channels)
    np.testing.assert_array_equal(pixels, images.reference(data, "L" if channels == 1 else "RGB"))


@pytest.mark.parametrize("mode", ["RGBA", "LA", "P", "1"])
def test_png_modes_become_rgb_or_luminance_as_pillow_converts_them(mode: str) -> None:
    out = io.BytesIO()
    Image.fromarray(images.photo(24, 16)).convert(mode).save(out, "PNG")
    data = out.getvalue()
    header = read_header(data, LIMIT)
    for channels, target in ((3, "RGB"), (1, "L")):
        np.testing.assert_array_equal(
            decode(data, header, channels), images.reference(data, target)
        )


def test_a_palette_with_transparency_drops_its_alpha_without_a_warning() -> None:
    out = io.BytesIO()
    Image.fromarray(images.photo(24, 16)).convert("P").save(out, "PNG", transparency=3)
    data = out.getvalue()
    pixels = decode(data, read_header(data, LIMIT), 3)  # warnings are errors in the suite
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pillow's own convert("RGB") warns here
        np.testing.assert_array_equal(pixels, images.reference(data))


@pytest.mark.parametrize("name", sorted(images.HOSTILE))
def test_each_hostile_image_is_refused_naming_its_rule(name: str) -> None:
    make, words = images.HOSTILE[name]
    data = make()
    with pytest.raises(ImageRefused, match=words):
        decode(data, read_header(data, LIMIT), 3)


def test_the_pixel_bound_is_read_from_the_header_before_any_decoding() -> None:
    data = images.encode(images.photo(40, 30))
    assert read_header(data, 40 * 30).width == 40
    with pytest.raises(ImageRefused, match=r"40x30 JPEG \(1200 pixels\), over the limit of 1199"):
        read_header(data, 40 * 30 - 1)


def test_a_png_without_its_header_chunk_is_refused() -> None:
    with pytest.raises(ImageRefused, match="corrupt or truncated PNG"):
        read_header(b"\x89PNG\r\n\x1a\n\x00\x00", LIMIT)


@pytest.mark.parametrize(
    "damage",
    [lambda d: d[: len(d) * 2 // 3], lambda d: d[:40] + b"\x00" * (len(d) - 40)],
    ids=["truncated", "zeroed"],
)
def test_a_damaged_png_is_refused(damage: Callable[[bytes], bytes]) -> None:
    data = damage(images.encode(images.photo(64, 48), "PNG"))
    with pytest.raises(ImageRefused, match="corrupt or truncated PNG"):
        decode(data, read_header(data, LIMIT), 3)
