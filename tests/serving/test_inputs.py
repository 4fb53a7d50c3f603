"""The one validation of a request's inputs: names, then each input's declared dtype and shape,
checked before any value is converted (TF Serving's messages)."""

from __future__ import annotations

from collections.abc import Collection, Iterator

import numpy as np
import pytest

from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.serving.inputs import ConvertedInputs, Header, check_text, validated
from gateway.serving.signature import Signature
from tests.serving.test_signature import GOOD, SIG


def test_valid_inputs_pass() -> None:
    assert validated(SIG, ConvertedInputs(GOOD)) is GOOD


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            {"x": GOOD["x"]},
            "input size does not match signature: 1!=2 len({x}) != len({k,x}). "
            "Sent extra: {}. Missing but required: {k}.",
        ),
        (
            {**GOOD, "extra": GOOD["k"]},
            "input size does not match signature: 3!=2 len({extra,k,x}) != len({k,x}). "
            "Sent extra: {extra}. Missing but required: {}.",
        ),
        (
            {**GOOD, "x": GOOD["x"].astype(np.float64)},
            "input 'x' has dtype float64 but the signature expects float32",
        ),
        (
            {**GOOD, "x": np.zeros((3, 5), np.float32)},
            "input 'x' has shape [3, 5] but the signature expects [-1, 4] (-1 = any size)",
        ),
        (
            {**GOOD, "x": np.zeros((4,), np.float32)},
            "input 'x' has shape [4] but the signature expects [-1, 4] (-1 = any size)",
        ),
    ],
)
def test_bad_inputs_say_what_is_wrong(inputs: dict[str, np.ndarray], message: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        validated(SIG, ConvertedInputs(inputs))
    assert info.value.message == message


def test_tensorflow_signatures_leave_shapes_to_the_graph() -> None:
    loose = Signature("s", SIG.inputs, SIG.outputs, check_shapes=False)
    validated(loose, ConvertedInputs({**GOOD, "x": np.zeros((1,), np.float32)}))


class _Headers:
    """Headers that declare ``shape`` for ``x`` and ``k``, then fail the request's byte bound
    when ``over``; counts conversions."""

    def __init__(self, shape: tuple[int, ...], *, over: bool = False) -> None:
        self._shape, self._over, self.converted = shape, over, 0

    @property
    def names(self) -> Collection[str]:
        return ("x", "k")

    def headers(self) -> Iterator[Header]:
        yield "x", "float32", self._shape
        yield "k", "int64", ()
        if self._over:
            raise ResourceExhausted("over the request's byte bound")

    def arrays(self) -> dict[str, np.ndarray]:
        self.converted += 1
        return {"x": np.zeros(self._shape, np.float32), "k": np.zeros((), np.int64)}

    def fast_arrays(self, expected: object) -> None:
        return None  # never read straight from the wire: the one validation runs


def test_nothing_is_converted_before_every_header_passes() -> None:
    bad, late, good = _Headers((3, 5)), _Headers((3, 4), over=True), _Headers((3, 4))
    with pytest.raises(InvalidArgument, match="has shape"):
        validated(SIG, bad)
    with pytest.raises(ResourceExhausted):
        validated(SIG, late)
    assert validated(SIG, good)["x"].shape == (3, 4)
    assert (bad.converted, late.converted, good.converted) == (0, 0, 1)


def test_dtypes_are_left_alone_when_asked() -> None:
    """Serialized Examples feed a TensorFlow signature's input whatever dtype it declares."""
    examples = {**GOOD, "x": np.zeros((3, 4), object)}
    with pytest.raises(InvalidArgument, match="dtype"):
        validated(SIG, ConvertedInputs(examples))
    assert validated(SIG, ConvertedInputs(examples), check_dtypes=False) is examples


def test_strings_for_a_text_runtime_must_be_utf8() -> None:
    """Checked per request: bytes, str and numbers pass; one bad element names
    its input."""
    good = np.array([b"ascii", "h\u00e9llo".encode(), b""], dtype=object)
    check_text({"s": good, "x": np.zeros(3, np.float32), "t": np.array(["text"], dtype=object)})
    bad = np.array([[b"ok", b"\xff\xfe"]], dtype=object)
    with pytest.raises(InvalidArgument, match="string input 'b' is not valid UTF-8"):
        check_text({"s": good, "b": bad})
