"""Signatures: built from a worker's load reply, and the request checks made before queueing."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from gateway.errors import FailedPrecondition, InvalidArgument
from gateway.serving.signature import (
    DEFAULT_SIGNATURE,
    PREDICT_METHOD,
    Signature,
    TensorSpec,
    find_signature,
    shape_matches,
)

SIG = Signature(
    DEFAULT_SIGNATURE,
    inputs=(TensorSpec("x", "float32", (-1, 4)), TensorSpec("k", "int64", None)),
    outputs=(TensorSpec("y", "float32", (-1, 2)), TensorSpec("z", "string", (-1,))),
)
GOOD = {"x": np.zeros((3, 4), np.float32), "k": np.zeros((), np.int64)}


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
