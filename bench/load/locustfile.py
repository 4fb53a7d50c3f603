"""The load-testing seeds' experiment as a Locust file: ResNet50 over TF Serving's REST API.

The seeds (``Load-testing TensorFlow Serving's REST Interface``) ran each test for 5 minutes with
Locust users that each send one request a second, adding one user a second up to 150. Here each
user POSTs TF Serving's row format, ``{"instances": [<one 224×224×3 float image>]}``, to
``/v1/models/<model>:predict`` and waits for the answer, aiming at one request a second
(``constant_throughput(1)``: past the server's capacity a user sends its next request as soon as
its answer comes). The image is the bench's deterministic ResNet50 input (values in [0, 1)),
encoded once per process. The ramp is this file's load shape (:class:`SeedsRamp`): one user a
second up to ``--ramp-users`` (150), then ``--plateau-s`` (150 s) at full strength, then stop.

Against a deployed cluster (deploy/k8s: the ``tensorgate`` Service, REST on port 8501)::

    kubectl port-forward svc/tensorgate 8501:8501 &
    locust -f bench/load/locustfile.py --headless -H http://127.0.0.1:8501 \\
        --csv seeds --csv-full-history

or from a pod inside the cluster with ``-H http://tensorgate.<namespace>.svc.cluster.local:8501``.
``--model-name`` picks the model (default ``resnet50``); ``--body-file`` and ``--path`` send
another body to another path (the bench's FastAPI peer: raw float32 bytes to ``/inline``).
``python -m bench run --only seeds`` runs this file headless against tensorgate and the FastAPI
server at this machine's scale (bench/scenarios/seeds.py).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from locust import FastHttpUser, LoadTestShape, constant_throughput, events, task

RESNET_SIZE = 224


def _options(parser: Any) -> None:
    parser.add_argument("--model-name", default="resnet50", help="the served model's name")
    parser.add_argument("--body-file", default="", help="send this file's bytes instead")
    parser.add_argument("--path", default="", help="POST here instead of TF Serving's :predict")
    parser.add_argument("--content-type", default="application/json", help="the body's media type")
    parser.add_argument("--ramp-users", type=int, default=150, help="users at the ramp's end")
    parser.add_argument("--plateau-s", type=int, default=150, help="seconds at full strength")


events.init_command_line_parser.add_listener(_options)  # type: ignore[no-untyped-call]


def tf_serving_body(seed: int = 0) -> bytes:
    """``{"instances": [image]}``: one NHWC float32 image, as TF Serving's row format has it."""
    shape = (1, RESNET_SIZE, RESNET_SIZE, 3)
    image = np.random.default_rng(seed).random(shape, dtype=np.float32)
    return json.dumps({"instances": image.tolist()}).encode()


class SeedsUser(FastHttpUser):
    """One client of the seeds' experiment: a predict, then the next about a second later."""

    wait_time = constant_throughput(1)
    _body: Any = None
    """The request body (bytes), shared by the process's users."""

    def on_start(self) -> None:
        options = self.environment.parsed_options
        self.path = options.path or f"/v1/models/{options.model_name}:predict"
        self.headers = {"Content-Type": options.content_type}
        if SeedsUser._body is None:  # once per process: encoding the image costs ~0.1 s
            if options.body_file:
                with open(options.body_file, "rb") as f:
                    SeedsUser._body = f.read()
            else:
                SeedsUser._body = tf_serving_body()

    @task
    def predict(self) -> None:
        self.client.post(self.path, data=self._body, headers=self.headers, name="predict")


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
