"""Signatures: built from a worker's load reply, and the request checks made before queueing."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from gateway.errors import FailedPrecondition, InvalidArgument
from gateway.serving.signature import (
    DEFAULT_SIGNATURE,
    PREDICT_METHOD,
    DtypeMismatch,
    Signature,
    TensorSpec,
    find_signature,
    shape_matches,
    takes_images,
)

SIG = Signature(
    DEFAULT_SIGNATURE,
    inputs=(TensorSpec("x", "float32", (-1, 4)), TensorSpec("k", "int64", None)),
    outputs=(TensorSpec("y", "float32", (-1, 2)), TensorSpec("z", "string", (-1,))),
)
GOOD: dict[str, np.ndarray] = {"x": np.zeros((3, 4), np.float32), "k": np.zeros((), np.int64)}


def test_from_wire_reads_shapes_names_and_unservable_definitions() -> None:
    wire = {
        "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 1], "tensor_name": "x:0"}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": None}],
        "method_name": "tensorflow/serving/regress",
        "unservable": "an init op",
        "definition": base64.b64encode(b"\x01\x02").decode(),
    }
    sig = Signature.from_wire("s", wire, check_shapes=False)
    assert sig.inputs == (TensorSpec("x", "float32", (-1, 1), "x:0"),)
    assert sig.outputs[0].shape is None
    assert (sig.method_name, sig.unservable, sig.definition) == (
        "tensorflow/serving/regress",
        "an init op",
        b"\x01\x02",
    )
    assert Signature.from_wire("p", {"inputs": [], "outputs": []}).method_name == PREDICT_METHOD


def test_output_filter() -> None:
    assert SIG.select_outputs([]) == ["y", "z"]
    names = SIG.output_names()
    assert names == ["y", "z"]
    names.append("w")  # the caller's own list: the signature's stays as it was
    assert SIG.output_names() == ["y", "z"] and SIG.select_outputs([]) == ["y", "z"]
    assert SIG.select_outputs(["z"]) == ["z"]
    with pytest.raises(InvalidArgument, match="alias not found in signature: w"):
        SIG.select_outputs(["w"])
    with pytest.raises(InvalidArgument, match="duplicate output tensor alias: y"):
        SIG.select_outputs(["y", "y"])


def test_shape_matching() -> None:
    assert shape_matches((2, 4), (-1, 4))
    assert not shape_matches((2, 4), (2, 4, 1))
    assert shape_matches((), ())


def test_find_signature_defaults_and_refuses() -> None:
    broken = Signature("init", (), (), unservable="it is an init op")
    signatures = {DEFAULT_SIGNATURE: SIG, "init": broken}
    assert find_signature(signatures, "") is SIG
    with pytest.raises(FailedPrecondition, match='Serving signature key "other" not found'):
        find_signature(signatures, "other")
    with pytest.raises(InvalidArgument, match='"init" cannot be run: it is an init op'):
        find_signature(signatures, "init")


IMAGES = Signature(
    DEFAULT_SIGNATURE,
    inputs=(
        TensorSpec("pic", "float32", (-1, 224, 224, 3)),
        TensorSpec("gray", "uint8", (2, -1, -1, 1)),
        TensorSpec("four", "float32", (-1, 8, 8, 4)),
        TensorSpec("flat", "float32", (-1, 3)),
        TensorSpec("text", "string", (-1,)),
        TensorSpec("mask", "bool", (-1, 8, 8, 1)),
    ),
    outputs=(TensorSpec("y", "float32", (-1, 2)),),
    encoded_images=True,
)


def test_image_inputs_are_numeric_nhwc_with_one_or_three_channels() -> None:
    assert IMAGES.image_inputs == {"pic", "gray"}
    assert [s.name for s in IMAGES.image_specs()] == ["pic", "gray"]
    assert takes_images(TensorSpec("x", "bfloat16", (-1, -1, -1, 3)))
    assert not takes_images(TensorSpec("x", "float32", None))
    plain = Signature(DEFAULT_SIGNATURE, IMAGES.inputs, IMAGES.outputs)  # a TensorFlow model's
    assert plain.image_inputs == frozenset()


def test_an_image_input_takes_a_string_tensor_of_one_image_a_row() -> None:
    IMAGES.check_input("pic", "string", (5,))
    IMAGES.check_input("gray", "string", (2,))
    IMAGES.check_input("pic", "float32", (1, 224, 224, 3))  # its own tensors still
    words = r"'pic' takes encoded images as a string tensor of shape \[batch\] \(one JPEG or PNG"
    with pytest.raises(InvalidArgument, match=words + r" per row\), got shape \[1, 1\]"):
        IMAGES.check_input("pic", "string", (1, 1))
    with pytest.raises(InvalidArgument, match=r"shape \[2\] .* got shape \[3\]"):
        IMAGES.check_input("gray", "string", (3,))


@pytest.mark.parametrize("name", ["four", "flat", "mask"])
def test_other_inputs_and_other_platforms_refuse_strings_as_before(name: str) -> None:
    with pytest.raises(DtypeMismatch, match=f"input '{name}' has dtype string"):
        IMAGES.check_input(name, "string", (1,))
    plain = Signature(DEFAULT_SIGNATURE, IMAGES.inputs, IMAGES.outputs)
    with pytest.raises(DtypeMismatch, match="input 'pic' has dtype string"):
        plain.check_input("pic", "string", (1,))


def test_from_wire_carries_the_encoded_images_choice() -> None:
    wire = {
        "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 4, 4, 3]}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": [-1]}],
    }
    assert Signature.from_wire("s", wire, encoded_images=True).image_inputs == {"x"}
    assert Signature.from_wire("s", wire).image_inputs == frozenset()
