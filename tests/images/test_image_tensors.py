"""A request's encoded images → its image inputs' tensors, against Pillow's decode + resize."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from gateway.errors import FailedPrecondition, InvalidArgument, ResourceExhausted
from gateway.images.image_tensors import decode_inputs
from gateway.images.options import ImageLimits, ImageOptions
from tests.support import images


@dataclass(frozen=True)
class Spec:
    name: str
    dtype: str
    shape: tuple[int, ...] | None


PLAIN = ImageOptions()
LIMITS = ImageLimits()


def strings(*items: bytes) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array


def test_images_of_the_inputs_size_are_exactly_pillows_values_in_the_inputs_dtype() -> None:
    data = [images.encode(images.photo(16, 12, seed=s)) for s in range(3)]
    spec = Spec("x", "float32", (-1, 12, 16, 3))
    out = decode_inputs([spec], {"x": strings(*data)}, PLAIN, LIMITS)["x"]
    assert out.dtype == np.float32 and out.shape == (3, 12, 16, 3)
    expected = np.stack([images.reference(d) for d in data]).astype(np.float32)
    np.testing.assert_array_equal(out, expected)  # 0..255, not scaled


def test_other_sizes_are_resized_bilinearly_within_the_stated_tolerance() -> None:
    small, large = images.encode(images.photo(30, 20)), images.encode(images.photo(100, 75), "PNG")
    spec = Spec("x", "uint8", (2, 24, 32, 3))
    out = decode_inputs([spec], {"x": strings(small, large)}, PLAIN, LIMITS)["x"]
    for row, data in enumerate((small, large)):
        expected = images.reference(data, size=(32, 24)).astype(np.int16)
        assert np.abs(out[row].astype(np.int16) - expected).max() <= images.RESIZE_TOLERANCE


def test_one_channel_inputs_get_luminance_and_gray_images_feed_three_channels() -> None:
    colour = images.encode(images.photo(8, 8))
    gray = images.encode(images.photo(8, 8, channels=1), "PNG")
    one = decode_inputs([Spec("x", "uint8", (-1, 8, 8, 1))], {"x": strings(colour)}, PLAIN, LIMITS)
    np.testing.assert_array_equal(one["x"][0], images.reference(colour, "L"))
    three = decode_inputs([Spec("x", "uint8", (-1, 8, 8, 3))], {"x": strings(gray)}, PLAIN, LIMITS)
    np.testing.assert_array_equal(three["x"][0], images.reference(gray, "RGB"))


def test_channel_order_range_mean_and_std_apply_in_that_order() -> None:
    data = images.encode(images.photo(8, 6), "PNG")
    rgb = images.reference(data).astype(np.float32)
    options = ImageOptions("BGR", (0.0, 1.0), (0.1, 0.2, 0.3), (0.5, 0.25, 2.0))
    spec = Spec("x", "float32", (-1, 6, 8, 3))
    out = decode_inputs([spec], {"x": strings(data)}, options, LIMITS)["x"][0]
    bgr = rgb[:, :, ::-1] / 255.0
    expected = (bgr - np.array([0.1, 0.2, 0.3], np.float32)) / np.array(
        [0.5, 0.25, 2.0], np.float32
    )
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_bfloat16_and_float64_inputs_take_the_values_in_their_dtype() -> None:
    data = images.encode(images.photo(4, 4), "PNG")
    for dtype, numpy in (("bfloat16", ml_dtypes.bfloat16), ("float64", np.float64)):
        out = decode_inputs([Spec("x", dtype, (-1, 4, 4, 3))], {"x": strings(data)}, PLAIN, LIMITS)
        assert out["x"].dtype == np.dtype(numpy)
        np.testing.assert_array_equal(out["x"][0].astype(np.float64), images.reference(data))


def test_numeric_tensors_and_other_inputs_pass_through_untouched() -> None:
    pixels = np.zeros((1, 4, 4, 3), np.float32)
    other = np.ones(3, np.int64)
    spec = Spec("x", "float32", (-1, 4, 4, 3))
    out = decode_inputs([spec], {"x": pixels, "k": other}, PLAIN, LIMITS)
    assert out["x"] is pixels and out["k"] is other


def test_dynamic_height_and_width_take_images_of_one_shared_size_unresized() -> None:
    a, b = images.encode(images.photo(10, 7)), images.encode(images.photo(10, 7, seed=1))
    spec = Spec("x", "uint8", (-1, -1, -1, 3))
    out = decode_inputs([spec], {"x": strings(a, b)}, PLAIN, LIMITS)["x"]
    assert out.shape == (2, 7, 10, 3)
    np.testing.assert_array_equal(out[1], images.reference(b))
    other = images.encode(images.photo(11, 7))
    with pytest.raises(InvalidArgument, match="image 1 is 11x7 but image 0 is 10x7"):
        decode_inputs([spec], {"x": strings(a, other)}, PLAIN, LIMITS)
    half = Spec("x", "uint8", (-1, 8, -1, 3))
    with pytest.raises(InvalidArgument, match=r"takes images of height 8 .* image 0's height is 7"):
        decode_inputs([half], {"x": strings(a)}, PLAIN, LIMITS)


@pytest.mark.parametrize("name", sorted(images.HOSTILE))
def test_a_hostile_image_fails_the_request_naming_the_input_row_and_rule(name: str) -> None:
    make, words = images.HOSTILE[name]
    good = images.encode(images.photo(8, 8))
    spec = Spec("pic", "float32", (-1, 8, 8, 3))
    with pytest.raises(InvalidArgument, match=rf"^input 'pic' image 1 .*{words}"):
        decode_inputs([spec], {"pic": strings(good, make())}, PLAIN, LIMITS)


def test_images_per_request_and_decoded_bytes_are_bounded() -> None:
    good = images.encode(images.photo(8, 8))
    spec = Spec("x", "float32", (-1, 8, 8, 3))
    few = ImageLimits(max_images=2)
    decode_inputs([spec], {"x": strings(good, good)}, PLAIN, few)
    with pytest.raises(
        InvalidArgument, match=r"3 or more images, over the limit of 2 .*images_per"
    ):
        decode_inputs([spec], {"x": strings(good, good, good)}, PLAIN, few)
    tight = ImageLimits(max_bytes=2 * 8 * 8 * 3 * 4 - 1)  # two float32 8x8 RGB images, less one
    with pytest.raises(ResourceExhausted, match="--max_request_bytes"):
        decode_inputs([spec], {"x": strings(good, good)}, PLAIN, tight)


def test_scaling_options_on_an_integer_input_are_a_failed_precondition() -> None:
    good = images.encode(images.photo(8, 8))
    spec = Spec("x", "uint8", (-1, 8, 8, 3))
    with pytest.raises(FailedPrecondition, match="need a floating-point input"):
        decode_inputs([spec], {"x": strings(good)}, ImageOptions(value_range=(0, 1)), LIMITS)
