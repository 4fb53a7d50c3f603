"""The load-testing seeds' experiment as a Locust file: ResNet50 over REST, one image a request.

The seeds (``Load-testing TensorFlow Serving's REST Interface``) ran each test for 5 minutes with
Locust users that each send one request a second, adding one user a second up to 150. Here each
user POSTs one image and waits for the answer, aiming at one request a second
(``constant_throughput(1)``: past the server's capacity a user sends its next request as soon as
its answer comes). The ramp is this file's load shape (:class:`SeedsRamp`): one user a second up
to ``--ramp-users`` (150), then ``--plateau-s`` (150 s) at full strength, then stop.

What a request carries (``--payload``):

- ``rows`` (the default): TF Serving's row format of a decoded image,
  ``{"instances": [<one 224×224×3 float image>]}``, to ``/v1/models/<model>:predict`` (the
  bench's deterministic ResNet50 input, values in [0, 1), encoded once per process);
- ``tf-b64``: one JPEG, ``{"instances": [{"b64": "<the file>"}]}``, to the same URL (what TF
  Serving users send a model that decodes its own images; tensorgate decodes them for ONNX);
- ``v2-binary``: one JPEG as the Open Inference Protocol's binary data extension (BYTES ``[1]``:
  a 4-byte length, then the file) to ``/v2/models/<model>/infer``;
- ``upload``: one JPEG as a multipart file upload (field ``file``) to ``--path``: what the
  seeds' FastAPI server took (``UploadFile``);
- ``--body-file``: that file's bytes as they are, to ``--path`` (the bench's FastAPI peer takes
  raw float32 bytes at ``/inline``).

The JPEGs are every ``*.jpg`` of ``--image-dir`` in name order, sent in turn across the
process's users; ``python -m bench seed-images DIR`` writes the bench's set (224 × 224 and
1000 × 750 photograph-like images).

Against a deployed cluster (deploy/k8s: the ``tensorgate`` Service, REST on port 8501)::

    python -m bench seed-images /tmp/seed-images
    kubectl port-forward svc/tensorgate 8501:8501 &
    locust -f bench/load/locustfile.py --headless -H http://127.0.0.1:8501 \\
        --payload tf-b64 --image-dir /tmp/seed-images --csv seeds --csv-full-history

or from a pod inside the cluster with ``-H http://tensorgate.<namespace>.svc.cluster.local:8501``.
``--model-name`` picks the model (default ``resnet50``). ``python -m bench run --only seeds``
runs this file headless against tensorgate and the FastAPI server at this machine's scale
(bench/scenarios/seeds.py).
"""

from __future__ import annotations

import base64
import itertools
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from locust import FastHttpUser, LoadTestShape, constant_throughput, events, task

RESNET_SIZE = 224
PAYLOADS = ("rows", "tf-b64", "v2-binary", "upload")
BOUNDARY = "seeds-boundary-7f3a9c"
INPUT_NAME = "images"


def _options(parser: Any) -> None:
    parser.add_argument("--model-name", default="resnet50", help="the served model's name")
    parser.add_argument("--payload", default="rows", choices=PAYLOADS, help="what to send")
    parser.add_argument("--image-dir", default="", help="the JPEGs the image payloads send")
    parser.add_argument("--body-file", default="", help="send this file's bytes instead")
    parser.add_argument("--path", default="", help="POST here instead of the payload's own URL")
    parser.add_argument("--content-type", default="application/json", help="the body's media type")
    parser.add_argument("--ramp-users", type=int, default=150, help="users at the ramp's end")
    parser.add_argument("--plateau-s", type=int, default=150, help="seconds at full strength")


events.init_command_line_parser.add_listener(_options)  # type: ignore[no-untyped-call]


def tf_serving_body(seed: int = 0) -> bytes:
    """``{"instances": [image]}``: one NHWC float32 image, as TF Serving's row format has it."""
    shape = (1, RESNET_SIZE, RESNET_SIZE, 3)
    image = np.random.default_rng(seed).random(shape, dtype=np.float32)
    return json.dumps({"instances": image.tolist()}).encode()


def tf_b64_body(jpeg: bytes) -> bytes:
    return json.dumps({"instances": [{"b64": base64.b64encode(jpeg).decode()}]}).encode()


def v2_binary_body(jpeg: bytes) -> tuple[bytes, dict[str, str]]:
    """The binary data extension: the JSON header, then BYTES ``[1]`` (a length, the file)."""
    data = struct.pack("<I", len(jpeg)) + jpeg
    entry = {"name": INPUT_NAME, "datatype": "BYTES", "shape": [1]}
    header = {"inputs": [{**entry, "parameters": {"binary_data_size": len(data)}}]}
    text = json.dumps(header).encode()
    return text + data, {"Inference-Header-Content-Length": str(len(text))}


def upload_body(jpeg: bytes) -> bytes:
    """A multipart/form-data body with the file in field ``file`` (a browser's upload)."""
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="image.jpg"\r\nContent-Type: image/jpeg\r\n\r\n'
    )
    return head.encode() + jpeg + f"\r\n--{BOUNDARY}--\r\n".encode()


def requests(options: Any) -> tuple[str, list[tuple[bytes, dict[str, str]]]]:
    """The URL path and the (body, headers) of each request to send in turn."""
    model = options.model_name
    predict = f"/v1/models/{model}:predict"
    if options.body_file:
        body = Path(options.body_file).read_bytes()
        return options.path or predict, [(body, {"Content-Type": options.content_type})]
    if options.payload == "rows":
        json_type = {"Content-Type": "application/json"}
        return options.path or predict, [(tf_serving_body(), json_type)]
    jpegs = [p.read_bytes() for p in sorted(Path(options.image_dir).glob("*.jpg"))]
    if not jpegs:
        raise ValueError(f"--payload {options.payload} needs JPEGs in --image-dir")
    if options.payload == "tf-b64":
        json_type = {"Content-Type": "application/json"}
        return options.path or predict, [(tf_b64_body(j), json_type) for j in jpegs]
    if options.payload == "v2-binary":
        octets = {"Content-Type": "application/octet-stream"}
        bodies = [v2_binary_body(j) for j in jpegs]
        path = options.path or f"/v2/models/{model}/infer"
        return path, [(body, {**octets, **extra}) for body, extra in bodies]
    form = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    return options.path or "/image", [(upload_body(j), form) for j in jpegs]


class SeedsUser(FastHttpUser):
    """One client of the seeds' experiment: a request, then the next about a second later."""

    wait_time = constant_throughput(1)
    _path = ""
    _turns: Iterator[tuple[bytes, dict[str, str]]] | None = None
    """The requests in turn, shared by the process's users (built once: encoding costs)."""

    def on_start(self) -> None:
        if SeedsUser._turns is None:
            path, bodies = requests(self.environment.parsed_options)
            SeedsUser._path, SeedsUser._turns = path, itertools.cycle(bodies)

    @task
    def predict(self) -> None:
        assert SeedsUser._turns is not None  # set by on_start
        body, headers = next(SeedsUser._turns)
        data: Any = body  # geventhttpclient sends bytes as they are (its stub says str)
        self.client.post(SeedsUser._path, data=data, headers=headers, name="predict")


class SeedsRamp(LoadTestShape):
    """The seeds' ramp: one user a second up to ``--ramp-users``, ``--plateau-s`` at that, stop.
    (Timed from the test's start by Locust, unlike ``--run-time``, which counts from before a
    slow start-up on a busy machine.)"""

    def tick(self) -> tuple[int, float] | None:
        assert self.runner is not None  # set before the first tick
        options: Any = self.runner.environment.parsed_options
        elapsed: float = self.get_run_time()  # type: ignore[no-untyped-call]
        if elapsed >= options.ramp_users + options.plateau_s:
            return None
        return min(options.ramp_users, int(elapsed) + 1), 1.0
