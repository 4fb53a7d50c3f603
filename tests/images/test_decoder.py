"""The front end's decoding threads: off the loop, one model version's options at a time."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from gateway.errors import FailedPrecondition
from gateway.images.decoder import ImageDecoder
from gateway.images.options import OPTIONS_FILE
from gateway.serving.signature import TensorSpec
from tests.support import images

SPEC = TensorSpec("x", "float32", (-1, 4, 4, 3))


class ReadBy(dict[str, np.ndarray]):
    """Inputs that note the threads reading them."""

    def __init__(self, **arrays: np.ndarray) -> None:
        super().__init__(arrays)
        self.threads: set[int] = set()

    def get(self, key: str, default: object = None) -> np.ndarray:
        self.threads.add(threading.get_ident())
        return super().get(key)  # type: ignore[return-value]

    def __iter__(self) -> Iterator[str]:
        self.threads.add(threading.get_ident())
        return super().__iter__()


def one_image() -> np.ndarray:
    array = np.empty(1, dtype=object)
    array[0] = images.encode(images.photo(4, 4), "PNG")
    return array


async def test_images_are_decoded_off_the_event_loops_thread(tmp_path: Path) -> None:
    decoder = ImageDecoder(threads=1)
    inputs = ReadBy(x=one_image())

    try:
        out = await decoder.decode(str(tmp_path), [SPEC], inputs)
    finally:
        decoder.close()
    assert out["x"].shape == (1, 4, 4, 3)
    assert inputs.threads and threading.get_ident() not in inputs.threads


async def test_a_version_s_options_are_read_again_when_its_file_changes(tmp_path: Path) -> None:
    decoder = ImageDecoder(threads=1)
    folder = str(tmp_path)

    async def first_value() -> float:
        out = await decoder.decode(folder, [SPEC], {"x": one_image()})
        return float(out["x"][0, 0, 0, 0])

    try:
        plain = await first_value()
        path = tmp_path / OPTIONS_FILE
        path.write_text(json.dumps({"range": [0, 1]}))
        os.utime(path, ns=(1, 1))  # a stamp of its own, whatever the clock's resolution
        assert await first_value() == pytest.approx(plain / 255)
        path.write_text("{")
        os.utime(path, ns=(2, 2))
        with pytest.raises(FailedPrecondition, match="not JSON"):
            await first_value()
    finally:
        decoder.close()


def test_threads_must_be_at_least_one() -> None:
    with pytest.raises(ValueError, match="threads must be >= 1, got 0"):
        ImageDecoder(threads=0)
