"""Request logging's sampling and routing: the config in force decides per call, the draw samples
at the model's rate, each prefix has one writer, and a full writer's drops are counted."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.config.request_logging import RequestLogging
from gateway.observability.cells import Counter
from gateway.observability.request_log import RequestLog
from gateway.tfserving.codec.tfrecord import frame, read_records
from gateway.transport.surface import Sampled


def _spec(name: str, logging: RequestLogging | None) -> ModelSpecConfig:
    return ModelSpecConfig(name, f"/m/{name}", logging=logging)


def _log_as(request: Any, response: Any, sampled: Sampled) -> bytes:
    return frame(f"{request}:{response}:{sampled.sampling_rate}:{sampled.attributes}".encode())


def _read(prefix: Path) -> list[bytes]:
    out = []
    for path in sorted(prefix.parent.glob(f"{prefix.name}-*.tfrecord")):
        with path.open("rb") as stream:
            out += list(read_records(stream))
    return out


@pytest.fixture
def draws() -> Iterator[list[float]]:
    yield []


def _log(specs: list[ModelSpecConfig], draws: list[float], **kw: Any) -> RequestLog:
    return RequestLog(
        lambda: specs,
        max_pending=kw.pop("max_pending", 16),
        max_file_bytes=1 << 20,
        draw=lambda: draws.pop(0),
        **kw,
    )


def test_the_rate_samples_each_call_with_one_draw(tmp_path: Path, draws: list[float]) -> None:
    half = RequestLogging("file", str(tmp_path / "half"), 0.5, 2)
    every = RequestLogging("file", str(tmp_path / "every"), 1.0)
    never = RequestLogging("file", str(tmp_path / "never"), 0.0)
    specs = [_spec("h", half), _spec("e", every), _spec("n", never), _spec("off", None)]
    log = _log(specs, draws)
    draws += [0.2, 0.5, 0.49999]
    for i in range(3):
        log.offer("h", _log_as, f"h{i}", "r")
    log.offer("e", _log_as, "e0", "r")  # rate 1: no draw
    log.offer("off", _log_as, "x", "r")
    log.offer("unknown", _log_as, "x", "r")
    draws.append(0.0)
    log.offer("n", _log_as, "n0", "r")  # rate 0: never, whatever the draw
    assert draws == [0.0]
    assert sorted(log.writers) == [str(tmp_path / "every"), str(tmp_path / "half")]
    asyncio.run(log.close())
    assert _read(tmp_path / "half") == [b"h0:r:0.5:2", b"h2:r:0.5:2"]
    assert _read(tmp_path / "every") == [b"e0:r:1.0:0"]
    assert not list(tmp_path.glob("never*"))


def test_a_new_config_takes_effect_at_the_next_call(tmp_path: Path) -> None:
    specs = [_spec("m", None)]
    log = _log(specs, [])
    log.offer("m", _log_as, "before", "r")
    specs[0] = _spec("m", RequestLogging("file", str(tmp_path / "m"), 1.0))
    log.offer("m", _log_as, "after", "r")
    asyncio.run(log.close())
    assert _read(tmp_path / "m") == [b"after:r:1.0:0"]


def test_models_sharing_a_prefix_share_one_writer(tmp_path: Path) -> None:
    shared = RequestLogging("file", str(tmp_path / "all"), 1.0)
    log = _log([_spec("a", shared), _spec("b", shared)], [])
    log.offer("a", _log_as, "a", "r")
    log.offer("b", _log_as, "b", "r")
    assert len(log.writers) == 1
    asyncio.run(log.close())
    assert _read(tmp_path / "all") == [b"a:r:1.0:0", b"b:r:1.0:0"]


def test_a_full_writer_drops_and_counts_per_model(tmp_path: Path) -> None:
    taken, release = threading.Event(), threading.Event()

    def held(request: Any, response: Any, sampled: Sampled) -> bytes:
        taken.set()
        release.wait(30)
        return frame(b"held")

    counter = Counter(("model_name",))
    logging = RequestLogging("file", str(tmp_path / "m"), 1.0)
    log = _log([_spec("m", logging)], [], max_pending=1, dropped=counter)
    log.offer("m", held, "x", "r")
    assert taken.wait(30)
    log.offer("m", _log_as, "queued", "r")
    for _ in range(3):
        log.offer("m", _log_as, "dropped", "r")
    assert log.dropped == 3 and dict(counter.items()) == {("m",): 3}
    release.set()
    asyncio.run(log.close())
    assert _read(tmp_path / "m") == [b"held", b"queued:r:1.0:0"]
