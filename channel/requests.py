"""The requests, gateway → worker: one typed message per op and its constructor.

Build every request with its constructor (``load_request``, ...), never by hand: each carries an
integer id (from 1) that its reply repeats. The control requests are JSON objects with an
``"op"``; a run is a :class:`RunRequest`, a named tuple that only the binary layout of
:mod:`channel.wire` carries. What each op does and what it gets back is listed in
:mod:`channel.messages`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, NamedTuple, NotRequired, TypedDict

from channel.descriptors import TensorDesc

DEFAULT_SIGNATURE: Final = "serving_default"
"""The signature a request without a signature name gets (TF Serving's default)."""


class LoadRequest(TypedDict):
    op: Literal["load"]
    id: int
    key: str
    path: str
    platform: str
    intra_op: int
    inter_op: int
    tags: list[str]
    runtime: NotRequired[str]
    """``openvino``: serve the model on OpenVINO; absent: the platform's own runtime."""
    precision: NotRequired[str]
    """OpenVINO's inference precision, ``fp32`` or ``bf16`` (absent: ``fp32``)."""


class UnloadRequest(TypedDict):
    op: Literal["unload"]
    id: int
    key: str


class RunRequest(NamedTuple):
    """Run ``key`` on ``inputs`` (in the input area): ``outputs`` None asks for every output;
    ``deadline`` is ``time.monotonic()`` seconds (None: none); ``signature`` "" is the model's
    default; ``trace`` is the batch span's (trace id, span id), the worker's spans its children
    (None, or a zero id: untraced)."""

    id: int
    key: str
    inputs: tuple[TensorDesc, ...]
    outputs: tuple[str, ...] | None
    deadline: float | None
    signature: str
    trace: tuple[int, int] | None


class PingRequest(TypedDict):
    op: Literal["ping"]
    id: int
    key: NotRequired[str]


class StopRequest(TypedDict):
    op: Literal["stop"]
    id: int


Request = LoadRequest | UnloadRequest | RunRequest | PingRequest | StopRequest


def load_request(
    request_id: int,
    *,
    key: str,
    path: str,
    platform: str,
    intra_op: int,
    inter_op: int,
    tags: Sequence[str] = ("serve",),
    runtime: str = "",
    precision: str = "",
) -> LoadRequest:
    """``runtime`` "": the platform's own (the field is then absent); ``precision`` "": absent."""
    request: LoadRequest = {
        "op": "load",
        "id": request_id,
        "key": key,
        "path": path,
        "platform": platform,
        "intra_op": intra_op,
        "inter_op": inter_op,
        "tags": list(tags),
    }
    if runtime:
        request["runtime"] = runtime
    if precision:
        request["precision"] = precision
    return request


def unload_request(request_id: int, *, key: str) -> UnloadRequest:
    return {"op": "unload", "id": request_id, "key": key}


def run_request(
    request_id: int,
    *,
    key: str,
    inputs: Sequence[TensorDesc],
    outputs: Sequence[str] | None = None,
    deadline: float | None = None,
    signature: str = "",
    trace: tuple[int, int] | None = None,
) -> RunRequest:
    """``outputs`` None: every output; ``signature`` "": the model's default; ``trace`` None:
    untraced."""
    names = None if outputs is None else tuple(outputs)
    return RunRequest(request_id, key, tuple(inputs), names, deadline, signature, trace)


def ping_request(request_id: int, *, key: str | None = None) -> PingRequest:
    request: PingRequest = {"op": "ping", "id": request_id}
    if key is not None:
        request["key"] = key
    return request


def stop_request(request_id: int) -> StopRequest:
    return {"op": "stop", "id": request_id}
