"""A model's versions on disk, and what a worker's ``load`` reply says about one.

Layout: ``<base_path>/<integer version>/model.onnx`` (ONNX) or ``.../saved_model.pb`` (a TensorFlow
SavedModel; ``model_platform`` in the config wins over this detection).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from gateway.errors import FailedPrecondition, NotFound
from gateway.serving.signature import DEFAULT_SIGNATURE, Signature

ONNX_FILE = "model.onnx"
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")


def versions_on_disk(base_path: str) -> dict[int, str]:
    """Integer-named subdirectories of ``base_path`` (other entries are ignored). OSError when
    ``base_path`` cannot be listed (it does not exist, or is no directory one may read)."""
    found: dict[int, str] = {}
    for entry in os.listdir(base_path):
        path = os.path.join(base_path, entry)
        if entry.isdigit() and os.path.isdir(path):
            found[int(entry)] = path
    return found


def detect_platform(configured: str, directory: str) -> str:
    """The platform to load ``directory`` with; configured wins, else detected from files."""
    has_onnx = os.path.isfile(os.path.join(directory, ONNX_FILE))
    has_tf = any(os.path.isfile(os.path.join(directory, f)) for f in SAVED_MODEL_FILES)
    platform = configured or ("onnx" if has_onnx else "tensorflow" if has_tf else "")
    if not platform:
        raise FailedPrecondition(f"no {ONNX_FILE} or saved_model.pb in {directory}")
    if platform == "onnx" and not has_onnx:
        raise FailedPrecondition(f"model_platform is onnx but {directory} has no {ONNX_FILE}")
    if platform == "tensorflow" and not has_tf:
        raise NotFound(
            "Could not find SavedModel .pb or .pbtxt at supplied export directory path: "
            + directory
        )
    return platform


def model_path(platform: str, directory: str) -> str:
    """What a worker loads: the ONNX file, or the SavedModel directory."""
    return os.path.join(directory, ONNX_FILE) if platform == "onnx" else directory


def signatures_of(
    wire: Mapping[str, Any], *, check_shapes: bool, encoded_images: bool = False
) -> dict[str, Signature]:
    """Signatures from a worker's ``load`` reply ``signature``: one (ONNX, served as
    ``serving_default``) or, from TensorFlow, ``{"signatures": {name: {...}}}``. Input shapes
    are checked with ``check_shapes`` (see :attr:`Signature.check_shapes`); image inputs take
    encoded images with ``encoded_images`` (:attr:`Signature.encoded_images`)."""
    by_name = wire.get("signatures")
    if by_name is None:
        signature = Signature.from_wire(
            DEFAULT_SIGNATURE, wire, check_shapes=check_shapes, encoded_images=encoded_images
        )
        return {DEFAULT_SIGNATURE: signature}
    return {
        name: Signature.from_wire(
            name, data, check_shapes=check_shapes, encoded_images=encoded_images
        )
        for name, data in by_name.items()
    }
