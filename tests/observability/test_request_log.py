"""Request logging's sampling and routing: the config in force decides per call, the draw samples
at the model's rate, each prefix has one writer (finished once its prefix is no longer
configured), a full writer's drops are counted, a sampled REST call is logged from what its
handler left in its slot, and closing is bounded: a stuck writer cannot hold the exit, and one
line says what was written and dropped."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.config.request_logging import RequestLogging
from gateway.observability.cells import Counter
from gateway.observability.request_log import REST_LOG, LogLimits, RequestLog
from gateway.tfserving.codec.tfrecord import frame_record, read_records
from gateway.transport.surface import LogAs, Sampled

LIMITS = LogLimits(max_pending=16, max_pending_bytes=1 << 20, max_file_bytes=1 << 20)


def _spec(name: str, logging: RequestLogging | None) -> ModelSpecConfig:
    return ModelSpecConfig(name, f"/m/{name}", logging=logging)


def _record(request: Any, response: Any, sampled: Sampled) -> bytes:
    return frame_record(
        f"{request}:{response}:{sampled.sampling_rate}:{sampled.attributes}".encode()
    )


LOG_AS = LogAs(_record, lambda request, response: 1)


def _read(prefix: Path) -> list[bytes]:
    out = []
    for path in sorted(prefix.parent.glob(f"{prefix.name}-*.tfrecord")):
        with path.open("rb") as stream:
            out += list(read_records(stream))
    return out


def _named(folder: Path, pattern: str) -> list[Path]:
    """The files in ``folder`` whose names match ``pattern``."""
    return list(folder.glob(pattern))


@pytest.fixture
def draws() -> Iterator[list[float]]:
    yield []


def _log(
    specs: list[ModelSpecConfig], draws: list[float], limits: LogLimits = LIMITS, **kw: Any
) -> RequestLog:
    return RequestLog(specs, limits, draw=lambda: draws.pop(0), **kw)


async def test_the_rate_samples_each_call_with_one_draw(tmp_path: Path, draws: list[float]) -> None:
    half = RequestLogging("file", str(tmp_path / "half"), 0.5, 2)
    every = RequestLogging("file", str(tmp_path / "every"), 1.0)
    never = RequestLogging("file", str(tmp_path / "never"), 0.0)
    specs = [_spec("h", half), _spec("e", every), _spec("n", never), _spec("off", None)]
    log = _log(specs, draws)
    draws += [0.2, 0.5, 0.49999]
    for i in range(3):
        log.offer("h", LOG_AS, f"h{i}", "r")
    log.offer("e", LOG_AS, "e0", "r")  # rate 1: no draw
    log.offer("off", LOG_AS, "x", "r")
    log.offer("unknown", LOG_AS, "x", "r")
    draws.append(0.0)
    log.offer("n", LOG_AS, "n0", "r")  # rate 0: never, whatever the draw
    assert draws == [0.0]
    assert sorted(log.writers) == [str(tmp_path / "every"), str(tmp_path / "half")]
    await log.close()
    assert _read(tmp_path / "half") == [b"h0:r:0.5:2", b"h2:r:0.5:2"]
    assert _read(tmp_path / "every") == [b"e0:r:1.0:0"]
    assert not _named(tmp_path, "never*")


async def test_a_new_config_takes_effect_at_the_next_call(tmp_path: Path) -> None:
    log = _log([_spec("m", None)], [])
    log.offer("m", LOG_AS, "before", "r")
    log.configure([_spec("m", RequestLogging("file", str(tmp_path / "m"), 1.0))])
    log.offer("m", LOG_AS, "after", "r")
    await log.close()
    assert _read(tmp_path / "m") == [b"after:r:1.0:0"]


async def test_models_sharing_a_prefix_share_one_writer(tmp_path: Path) -> None:
    shared = RequestLogging("file", str(tmp_path / "all"), 1.0)
    log = _log([_spec("a", shared), _spec("b", shared)], [])
    log.offer("a", LOG_AS, "a", "r")
    log.offer("b", LOG_AS, "b", "r")
    assert len(log.writers) == 1
    await log.close()
    assert _read(tmp_path / "all") == [b"a:r:1.0:0", b"b:r:1.0:0"]


async def test_a_prefix_no_longer_configured_has_its_writer_finished(tmp_path: Path) -> None:
    """Each reload pointing the model at a new prefix: the previous prefix's writer takes no
    more records, writes what it had, and its thread ends; threads do not pile up."""
    baseline = threading.active_count()
    log = _log([], [])
    retired = []
    for i in range(30):
        log.configure([_spec("m", RequestLogging("file", str(tmp_path / f"p{i}"), 1.0))])
        log.offer("m", LOG_AS, f"call{i}", "r")
        (writer,) = log.writers.values()
        retired.append(writer)
    log.configure([_spec("m", None)])
    assert log.writers == {}
    for writer in retired:
        assert not writer.put(lambda: frame_record(b"late"), 1)  # finished: it takes no more
        assert writer.close(60)
    assert threading.active_count() == baseline
    await log.close()
    assert [_read(tmp_path / f"p{i}") for i in range(30)] == [
        [f"call{i}:r:1.0:0".encode()] for i in range(30)
    ]


async def test_a_full_writer_drops_and_counts_per_model(tmp_path: Path) -> None:
    taken, release = threading.Event(), threading.Event()

    def held(request: Any, response: Any, sampled: Sampled) -> bytes:
        taken.set()
        release.wait(30)
        return frame_record(b"held")

    counter = Counter(("model_name",))
    logging_ = RequestLogging("file", str(tmp_path / "m"), 1.0)
    limits = LogLimits(max_pending=1, max_pending_bytes=1 << 20, max_file_bytes=1 << 20)
    log = _log([_spec("m", logging_)], [], limits, dropped=counter)
    log.offer("m", LogAs(held, lambda q, r: 1), "x", "r")
    assert taken.wait(30)
    log.offer("m", LOG_AS, "queued", "r")
    for _ in range(3):
        log.offer("m", LOG_AS, "dropped", "r")
    assert log.dropped == 3 and dict(counter.items()) == {("m",): 3}
    release.set()
    await log.close()
    assert _read(tmp_path / "m") == [b"held", b"queued:r:1.0:0"]


async def test_the_bytes_a_call_holds_count_against_the_process_budget(tmp_path: Path) -> None:
    """Records of 300 bytes each against a 1000-byte budget, the writer stuck on the first:
    three more fit, the rest are dropped, whatever the record count allows."""
    taken, release = threading.Event(), threading.Event()

    def held(request: Any, response: Any, sampled: Sampled) -> bytes:
        taken.set()
        release.wait(30)
        return frame_record(b"held")

    limits = LogLimits(max_pending=1000, max_pending_bytes=1000, max_file_bytes=1 << 20)
    log = _log([_spec("m", RequestLogging("file", str(tmp_path / "m"), 1.0))], [], limits)
    log.offer("m", LogAs(held, lambda q, r: 100), "x", "r")
    assert taken.wait(30)
    big = LogAs(_record, lambda request, response: len(request) + len(response))
    for i in range(10):
        log.offer("m", big, "q" * 200, "r" * 99 + str(i))
    assert log.dropped == 7
    release.set()
    await log.close()
    assert len(_read(tmp_path / "m")) == 4


async def test_a_sampled_rest_call_is_logged_from_what_its_handler_left(tmp_path: Path) -> None:
    """The slot exists only inside a sampled call; a call that fails, or whose handler left
    nothing, logs nothing."""
    log = _log(
        [_spec("m", RequestLogging("file", str(tmp_path / "m"), 1.0)), _spec("off", None)], []
    )
    seen: list[bool] = []

    async def served(name: str) -> str:
        slot = REST_LOG.get()
        seen.append(slot is not None)
        if slot is not None:
            slot.fill(_record, name, "answer", 10)
        return name

    async def failed() -> str:
        slot = REST_LOG.get()
        assert slot is not None
        slot.fill(_record, "failed", "answer", 10)
        raise RuntimeError("the call failed")

    assert await log.logged("m", lambda: served("first")) == "first"
    assert await log.logged("off", lambda: served("unsampled")) == "unsampled"
    assert await log.logged("", lambda: served("no model")) == "no model"
    with pytest.raises(RuntimeError):
        await log.logged("m", failed)
    assert REST_LOG.get() is None
    await log.close()
    assert seen == [True, False, False]
    assert _read(tmp_path / "m") == [b"first:answer:1.0:0"]


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gateway.observability.request_log"]


def _stuck_log(tmp_path: Path) -> tuple[RequestLog, threading.Event]:
    """A log whose writer is stuck in its first record, with three more queued."""
    taken, release = threading.Event(), threading.Event()

    def held(request: Any, response: Any, sampled: Sampled) -> bytes:
        taken.set()
        release.wait(60)
        return frame_record(b"held")

    log = _log([_spec("m", RequestLogging("file", str(tmp_path / "m"), 1.0))], [])
    log.offer("m", LogAs(held, lambda q, r: 1), "x", "r")
    assert taken.wait(30)
    for i in range(3):
        log.offer("m", LOG_AS, f"q{i}", "r")
    return log, release


async def test_closing_a_stuck_writer_ends_at_the_bound_and_says_what_was_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log, release = _stuck_log(tmp_path)
    caplog.set_level(logging.INFO, logger="gateway.observability.request_log")
    await log.close(0.05)
    release.set()
    (line,) = _lines(caplog)
    assert line == (
        "request log closed: 0 record(s) written, 4 dropped (0 with the queue full, 0 that "
        "could not be written, 0 that failed to build, 4 still queued at exit: the writers did "
        "not finish within 0.05 s)"
    )


async def test_a_second_signal_skips_the_flush(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log, release = _stuck_log(tmp_path)
    caplog.set_level(logging.INFO, logger="gateway.observability.request_log")

    hurry = asyncio.Event()
    hurry.set()
    await log.close(None, hurry)  # no time bound: only the signal ends it
    release.set()
    (line,) = _lines(caplog)
    assert line.endswith("4 still queued at exit: the flush was skipped (second signal))")


async def test_a_healthy_close_writes_everything_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = _log([_spec("m", RequestLogging("file", str(tmp_path / "m"), 1.0))], [])
    for i in range(5):
        log.offer("m", LOG_AS, f"c{i}", "r")
    caplog.set_level(logging.INFO, logger="gateway.observability.request_log")
    await log.close(60)
    assert len(_read(tmp_path / "m")) == 5
    (line,) = _lines(caplog)
    assert line.startswith("request log closed: 5 record(s) written, 0 dropped")
