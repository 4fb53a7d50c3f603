"""CPU per call of the request codecs the seeds' test leans on, measured in this process.

- **Image decoders** (:data:`DECODERS`): Pillow alone, and two libjpeg-turbo bindings, simplejpeg
  and PyTurboJPEG (its 1.x line: Debian's libturbojpeg is 2.1; a binding that cannot load is
  reported, not measured), each decoding the bench's JPEGs (:mod:`bench.load.seed_images`) to
  RGB, then again with the resize to 224 × 224 (Pillow's bilinear filter, as the gateway
  resizes); and the gateway's own path for one image (header checks, decode, resize, float32:
  :func:`gateway.images.image_tensors.decode_inputs`).
- **JSON bodies** (:data:`JSON_PATHS`): the seeds' float-row body (the ResNet50 input, 224 ×
  224 × 3 floats in TF Serving's row format, as ``tensorgate-2w-rest`` receives it) read into
  its tensor by TF Serving's REST codec before (orjson, a Python object per number) and now
  (:mod:`gateway.json_numbers`), the same for V2's JSON ``data``, and the bare parses of orjson
  and msgspec (when installed) for scale.

Each figure is the median over rounds of CPU seconds per call (``time.process_time``), each round
timing enough calls to take at least ``round_cpu_s``.
"""

from __future__ import annotations

import functools
import importlib
import io
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson
from PIL import Image

from bench.load import seed_images
from bench.systems.models import INPUT_NAMES, RESNET_SIZE, sample_input
from gateway.images.image_tensors import decode_inputs
from gateway.images.options import ImageLimits, ImageOptions
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.rest import json_request
from gateway.v2.declared import Limits
from gateway.v2.rest import request_body

Work = Callable[[], object]
TARGET = (RESNET_SIZE, RESNET_SIZE)


def cpu_per_call(work: Work, rounds: int, round_cpu_s: float) -> dict[str, float]:
    """Median, min and max over ``rounds`` of the CPU seconds one call of ``work`` takes."""
    work()  # warm: imports, caches, allocator
    per_call = []
    for _ in range(rounds):
        calls, start = 0, time.process_time()
        while True:
            work()
            calls += 1
            spent = time.process_time() - start
            if spent >= round_cpu_s:
                break
        per_call.append(spent / calls)
    return {
        "median_s": statistics.median(per_call),
        "min_s": min(per_call),
        "max_s": max(per_call),
    }


# -- image decoders ------------------------------------------------------------------------------
def _pillow(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


def _simplejpeg() -> Callable[[bytes], np.ndarray]:
    simplejpeg = importlib.import_module("simplejpeg")
    decode: Callable[[bytes], np.ndarray] = functools.partial(
        simplejpeg.decode_jpeg, colorspace="RGB"
    )
    return decode


def _pyturbojpeg() -> Callable[[bytes], np.ndarray]:
    turbojpeg = importlib.import_module("turbojpeg")
    decoder = turbojpeg.TurboJPEG()  # OSError / RuntimeError without a usable libturbojpeg
    decode: Callable[[bytes], np.ndarray] = functools.partial(
        decoder.decode, pixel_format=turbojpeg.TJPF_RGB
    )
    return decode


DECODERS: dict[str, Callable[[], Callable[[bytes], np.ndarray]]] = {
    "pillow": lambda: _pillow,
    "simplejpeg": _simplejpeg,
    "pyturbojpeg": _pyturbojpeg,
}
"""Candidate JPEG decoders: name → a factory of ``decode(data) -> RGB pixels`` (raises when the
binding is missing)."""


def _decode_resized(decode: Callable[[bytes], np.ndarray], data: bytes) -> np.ndarray:
    pixels = decode(data)
    return np.asarray(Image.fromarray(pixels).resize(TARGET, Image.Resampling.BILINEAR))


def _gateway_path(data: bytes) -> Work:
    spec = TensorSpec(INPUT_NAMES["resnet50"], "float32", (-1, *TARGET, 3))
    strings = np.empty(1, dtype=object)
    strings[0] = data
    inputs = {spec.name: strings}
    return lambda: decode_inputs([spec], inputs, ImageOptions(), ImageLimits())


def image_decoders(rounds: int, round_cpu_s: float) -> dict[str, Any]:
    """Every decoder on the first JPEG of each size: ``{size: {decoder: {"decode": figures,
    "decode+resize": figures} | {"unavailable": reason}}}``."""
    found: dict[str, Any] = {}
    for size in seed_images.SIZES:
        data = seed_images.jpegs(size, 1)[0]
        row: dict[str, Any] = {"jpeg_bytes": len(data)}
        for name, factory in DECODERS.items():
            try:
                decode = factory()
            except (ImportError, OSError, RuntimeError) as exc:
                row[name] = {"unavailable": f"{type(exc).__name__}: {exc}".splitlines()[0]}
                continue
            row[name] = {
                "decode": cpu_per_call(functools.partial(decode, data), rounds, round_cpu_s),
                "decode+resize": cpu_per_call(
                    functools.partial(_decode_resized, decode, data), rounds, round_cpu_s
                ),
            }
        row["tensorgate"] = {"image→tensor": cpu_per_call(_gateway_path(data), rounds, round_cpu_s)}
        found[size] = row
    return found


# -- JSON bodies ---------------------------------------------------------------------------------
def _tf_signature() -> Signature:
    name = INPUT_NAMES["resnet50"]
    return Signature(
        "serving_default",
        (TensorSpec(name, "float32", (-1, *TARGET, 3)),),
        (TensorSpec("probabilities", "float32", (-1, 1000)),),
    )


def _tf_rows(tensors: bool) -> Work:
    body = json.dumps({"instances": sample_input("resnet50").tolist()}).encode()
    signature = _tf_signature()

    def read() -> object:
        document = json_request.loads(body, tensors=tensors)
        return json_request.predict_inputs(document, signature, max_elements=1 << 24)

    return read


def _v2_body() -> bytes:
    image = sample_input("resnet50")
    entry = {"name": INPUT_NAMES["resnet50"], "datatype": "FP32", "shape": list(image.shape)}
    return json.dumps({"inputs": [{**entry, "data": image.ravel().tolist()}]}).encode()


def _v2_before() -> Work:
    """V2's JSON path as it was: orjson's objects, then the values converted."""
    from gateway.v2.declared import declare_input
    from gateway.v2.rest import json_values

    body = _v2_body()
    limits = Limits(1 << 24)

    def read() -> object:
        (item,) = orjson.loads(body)["inputs"]
        header = declare_input(item["name"], item["datatype"], item["shape"], limits)
        return json_values.to_array(item["data"], header)

    return read


def _v2_now() -> Work:
    body = _v2_body()
    signature = _tf_signature()
    limits = Limits(1 << 24)

    def read() -> object:
        parsed = request_body.parse_infer(body, None, "resnet50", "")
        inputs = request_body.rest_inputs(parsed, signature, limits)
        list(inputs.headers())
        return inputs.arrays()

    return read


def _bare(module: str) -> Work:
    body = json.dumps({"instances": sample_input("resnet50").tolist()}).encode()
    if module == "orjson":
        return lambda: orjson.loads(body)
    decoder = importlib.import_module("msgspec").json.Decoder()
    return lambda: decoder.decode(body)


JSON_PATHS: dict[str, Callable[[], Work]] = {
    "tf-rows before (orjson)": lambda: _tf_rows(tensors=False),
    "tf-rows now (json_numbers)": lambda: _tf_rows(tensors=True),
    "v2-data before (orjson)": _v2_before,
    "v2-data now (json_numbers)": _v2_now,
    "parse only: orjson": lambda: _bare("orjson"),
    "parse only: msgspec": lambda: _bare("msgspec"),
}
"""The seeds' 224 × 224 × 3 float body read each way: name → a factory of the work."""


def json_paths(rounds: int, round_cpu_s: float) -> dict[str, Any]:
    """CPU per call of each of :data:`JSON_PATHS` (``{"unavailable": reason}`` when its library
    is missing), and the body's size."""
    body = json.dumps({"instances": sample_input("resnet50").tolist()}).encode()
    found: dict[str, Any] = {"body_bytes": len(body)}
    for name, factory in JSON_PATHS.items():
        try:
            work = factory()
        except ImportError as exc:
            found[name] = {"unavailable": str(exc)}
            continue
        found[name] = cpu_per_call(work, rounds, round_cpu_s)
    return found
