"""The seeds' FastAPI patterns, one endpoint each (run under uvicorn; ``bench/.venvs/fastapi``).

- ``POST /inline``: the ONNX model runs inside the ``async`` endpoint, on the event loop;
- ``POST /thread``: ``run_in_executor`` on a one-thread ``ThreadPoolExecutor`` (the seed's advice:
  one thread, or the runtime's own threads thrash);
- ``POST /process``: ``run_in_executor`` on a one-process ``ProcessPoolExecutor`` whose initializer
  loads the model (the seed's fix for both problems);
- ``POST /image``: the seeds' own server, as the articles wrote it: an uploaded image file
  (``UploadFile``, multipart field ``file``) decoded with PIL to RGB, resized to the model's
  height and width (bilinear), its 0–255 values as float32, and the model run in the ``async``
  endpoint; the answer is JSON, ``{"predictions": [<the first output's row>]}``.

Request body of the first three: the input tensor as raw little-endian float32 bytes (rows of the
model's input shape; binary keeps JSON parsing out of the comparison, which favours FastAPI).
Response: the first output as raw float32 bytes. Configuration by environment: ``BENCH_MODEL``
(model.onnx path), ``BENCH_INTRA_OP`` (threads per session, default 1). ``GET /health`` answers
200 when loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import numpy as np
import onnxruntime as ort
from fastapi import FastAPI, Request, Response, UploadFile
from PIL import Image

_session: Any = None
_shape: tuple[int, ...] = ()
_input = ""


def _load() -> None:
    global _session, _shape, _input
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(os.environ.get("BENCH_INTRA_OP", "1"))
    options.inter_op_num_threads = 1
    _session = ort.InferenceSession(
        os.environ["BENCH_MODEL"], options, providers=["CPUExecutionProvider"]
    )
    meta = _session.get_inputs()[0]
    _input = meta.name
    _shape = tuple(int(d) if isinstance(d, int) else -1 for d in meta.shape[1:])


def _pool_worker_init() -> None:
    # Forked from a uvicorn worker: drop its SIGTERM/SIGINT handlers so the pool process stops
    # when told to, then load the model once.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _load()


def _predict(body: bytes) -> bytes:
    x = np.frombuffer(body, dtype=np.float32).reshape(-1, *_shape)
    out: np.ndarray = _session.run(None, {_input: x})[0]
    return out.tobytes()


_load()
_threads = ThreadPoolExecutor(max_workers=1)
_processes = ProcessPoolExecutor(max_workers=1, initializer=_pool_worker_init)


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    _threads.shutdown(wait=True, cancel_futures=True)
    _processes.shutdown(wait=True, cancel_futures=True)


app = FastAPI(lifespan=_lifespan)


@app.get("/health")
async def health() -> Response:
    return Response(b"ok")


@app.post("/inline")
async def inline(request: Request) -> Response:
    return Response(_predict(await request.body()), media_type="application/octet-stream")


@app.post("/thread")
async def thread(request: Request) -> Response:
    body = await request.body()
    out = await asyncio.get_running_loop().run_in_executor(_threads, _predict, body)
    return Response(out, media_type="application/octet-stream")


@app.post("/process")
async def process(request: Request) -> Response:
    body = await request.body()
    out = await asyncio.get_running_loop().run_in_executor(_processes, _predict, body)
    return Response(out, media_type="application/octet-stream")


@app.post("/image")
async def image(file: UploadFile) -> dict[str, Any]:
    data = await file.read()
    height, width = _shape[0], _shape[1]
    picture = Image.open(io.BytesIO(data)).convert("RGB")
    picture = picture.resize((width, height), Image.Resampling.BILINEAR)
    x = np.asarray(picture, dtype=np.float32)[np.newaxis]
    out: np.ndarray = _session.run(None, {_input: x})[0]
    return {"predictions": out.tolist()}
