"""The one log format (text and JSON) and the quieting of TensorFlow's start-up noise."""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile

import pytest

from channel import logs

TEXT_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} I \d+ worker-3 workers\.test\] hello 42$"
)


def _record(message: str = "hello %d", args: tuple[object, ...] = (42,)) -> logging.LogRecord:
    return logging.LogRecord("workers.test", logging.INFO, __file__, 1, message, args, None)


def test_text_is_one_line_with_time_level_pid_role_logger() -> None:
    line = logs.TextFormatter("worker-3").format(_record())
    assert TEXT_LINE.match(line), line
    assert f" {os.getpid()} " in line


class _Traced:
    ids = ("a" * 32, "b" * 16)


def test_json_has_the_fields_and_trace_ids_only_inside_a_traced_call() -> None:
    formatter = logs.JsonFormatter("gateway")
    plain = json.loads(formatter.format(_record()))
    assert set(plain) == {"time", "level", "pid", "process", "logger", "message"}
    assert plain["message"] == "hello 42" and plain["process"] == "gateway"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", plain["time"])
    token = logs.TRACE_IDS.set(_Traced())
    try:
        traced = json.loads(formatter.format(_record()))
    finally:
        logs.TRACE_IDS.reset(token)
    assert (traced["trace_id"], traced["span_id"]) == ("a" * 32, "b" * 16)


def test_json_carries_the_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "failed", (), exc_info=__import__("sys").exc_info()
        )
    entry = json.loads(logs.JsonFormatter("gateway").format(record))
    assert "ValueError: boom" in entry["exception"]


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="text, json"):
        logs.configure("gateway", "xml")


def test_tensorflow_noise_is_quieted_unless_the_environment_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in logs.NOISY_LOGGERS:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    logs.quiet_tensorflow()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
    assert logging.getLogger("tensorflow").level == logging.NOTSET
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
    logs.quiet_tensorflow()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == logs.QUIET_TF_CPP_LEVEL
    assert logging.getLogger("tensorflow").level == logging.ERROR
    assert logging.getLogger("absl").level == logging.ERROR


def test_native_stderr_while_tensorflow_loads_is_kept_out_but_errors_are_logged(
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(logs, "_quiet", False)
    for name in logs.NOISY_LOGGERS:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    # set, then deleted: monkeypatch records the variable's absence and restores it afterwards
    # (a plain delenv of an absent variable records nothing, and quiet_tensorflow's value would
    # leak into later tests' gateways)
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
    logs.quiet_tensorflow()
    caplog.set_level(logging.DEBUG)  # even at DEBUG, the noise stays out
    # no usable temporary directory (a read-only root file system): the capture needs none
    with monkeypatch.context() as no_tmp:
        no_tmp.setattr(tempfile, "tempdir", "/nonexistent/tmp")
        with logs.native_stderr():
            os.write(2, b"WARNING: All log messages before absl::InitializeLog() ...\n")
            os.write(2, b"I0000 00:00:1.5  42 cudart_stub.cc:31] Could not find cuda drivers\n")
            os.write(2, b"E0000 00:00:1.5  42 loader.cc:1] broken graph\n")
    assert capfd.readouterr().err == ""
    assert [(r.levelno, r.getMessage()[:5]) for r in caplog.records] == [(logging.ERROR, "E0000")]
