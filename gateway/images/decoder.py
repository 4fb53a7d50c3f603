"""The front end's image decoding: a bounded pool of threads that turns a request's encoded images
into its image inputs' tensors (:func:`gateway.images.image_tensors.decode_inputs`), never on the
event loop.

A request's images are one job; at most ``threads`` jobs run at once, the others wait in
arrival order (a caller that leaves before its job starts takes it out of the queue). libjpeg-
turbo (simplejpeg) and Pillow let the GIL go while they decode and resize, so the loop serves
other calls meanwhile. Each job reads its model version's ``image_options.json`` through a cache
that notices when the file changes (a stat, in the job's thread).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gateway.config.model_config import ConfigError
from gateway.errors import FailedPrecondition
from gateway.images.image_tensors import ImageInput, decode_inputs
from gateway.images.options import OPTIONS_FILE, ImageLimits, ImageOptions, read_options

_NO_FILE = -1


class ImageDecoder:
    """Decodes requests' images off the loop, ``threads`` at a time, within ``limits``."""

    def __init__(self, limits: ImageLimits | None = None, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.limits = limits or ImageLimits()
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="images")
        self._options: dict[str, tuple[int, ImageOptions]] = {}
        self._lock = threading.Lock()

    async def decode(
        self, version_dir: str, specs: Iterable[ImageInput], inputs: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """``inputs`` with their encoded images decoded (see :func:`decode_inputs`) for the model
        version in ``version_dir``; INVALID_ARGUMENT / RESOURCE_EXHAUSTED for the request's
        images, FAILED_PRECONDITION for a bad ``image_options.json``."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, self._decode, version_dir, tuple(specs), inputs
        )

    def _decode(
        self, version_dir: str, specs: tuple[ImageInput, ...], inputs: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return decode_inputs(specs, inputs, self.options(version_dir), self.limits)

    def options(self, version_dir: str) -> ImageOptions:
        """The version's image options, read again when its file changes (FAILED_PRECONDITION
        for a bad one). Called in the decoding threads."""
        if not version_dir:
            return ImageOptions()
        try:
            stamp = os.stat(os.path.join(version_dir, OPTIONS_FILE)).st_mtime_ns
        except OSError:  # no file (or no folder): the defaults
            stamp = _NO_FILE
        cached = self._options.get(version_dir)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            options = read_options(version_dir) if stamp != _NO_FILE else ImageOptions()
        except ConfigError as exc:
            raise FailedPrecondition(str(exc)) from None
        with self._lock:
            self._options[version_dir] = (stamp, options)
        return options

    def close(self) -> None:
        """Stop the threads once their jobs are done; queued jobs are cancelled."""
        self._executor.shutdown(wait=False, cancel_futures=True)
