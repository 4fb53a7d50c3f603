"""The ``tensorgate`` entry point in this process: exit status 2 and one line for a bad command
line, 1 for a bad config file or a gateway that cannot be built, 0 after --help / --version.
(Start-up failures after the workers start, such as a Unix socket path that is taken, are
driven through the real process in tests/e2e: test_listen.py, test_g3doc.py.)"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gateway.config.flags import usage, version_text
from gateway.main import main
from gateway.one_process import Gateway


@pytest.fixture
def root_logging() -> Iterator[None]:
    """``main`` configures the process's logging once flags parse: put pytest's back after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
            if isinstance(handler, logging.StreamHandler):
                handler.stream.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


def test_a_bad_command_line_is_one_line_and_status_two(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--model_base_path=/m", "--prot=1"]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        "tensorgate: unknown flag --prot (did you mean --port?); --help lists the flags\n"
    )
    assert captured.out == ""


def test_a_rule_broken_is_reported_the_same_way(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--port=9000"]) == 2
    assert capsys.readouterr().err == (
        "tensorgate: either model_base_path or model_config_file must be set\n"
    )


@pytest.mark.parametrize(("flag", "text"), [("--help", usage), ("--version", version_text)])
def test_help_and_version_print_and_exit_zero(
    flag: str, text: Callable[[], str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([flag])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == text()


@pytest.mark.usefixtures("root_logging")
def test_a_config_file_that_does_not_parse_is_status_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "models.config"
    config.write_text('model_config_list { config { nam: "x" } }\n')
    assert main([f"--model_config_file={config}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tensorgate: ") and err.count("\n") == 1
    assert str(config) in err and "ModelServerConfig" in err


@pytest.mark.usefixtures("root_logging")
def test_a_config_file_that_is_missing_is_status_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--model_config_file", str(tmp_path / "missing.config")]) == 1
    assert "missing.config" in capsys.readouterr().err


@pytest.mark.usefixtures("root_logging")
def test_a_gateway_that_cannot_be_built_is_status_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text("prometheus_config { enable: maybe }\n")
    argv = [f"--model_base_path={tmp_path}", f"--monitoring_config_file={monitoring}"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("tensorgate: ") and "MonitoringConfig" in err


@pytest.mark.usefixtures("root_logging")
@pytest.mark.parametrize("frontends", [1, 2], ids=["one process", "supervisor"])
def test_an_unexpected_error_at_start_is_one_line_status_one_and_no_ready_line(
    frontends: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A raw exception at start once ended the process with a bare traceback,
    and the ready fd closed only with the process. Now: one line naming the failure (its
    traceback attached to it), exit status 1, and --ready_fd closed without a line at once;
    the one-process gateway and the supervisor of several front ends alike."""
    from gateway.supervisor.supervisor_process import Supervisor

    async def start(self: object) -> None:
        raise ValueError("channel is closed")

    monkeypatch.setattr(Gateway if frontends == 1 else Supervisor, "start", start)
    read_fd, write_fd = os.pipe()
    try:
        argv = [f"--model_base_path={tmp_path}", f"--ready_fd={write_fd}", "--port=0"]
        assert main([*argv, f"--frontends={frontends}", "--workers=1"]) == 1
        assert os.read(read_fd, 100) == b""  # end of file: the writer end is closed, no line
    finally:
        os.close(read_fd)
    err = capfd.readouterr().err
    (line,) = [x for x in err.splitlines() if "tensorgate]" in x]
    assert line.endswith(
        f" E {os.getpid()} gateway tensorgate] failed to start: ValueError: channel is closed"
    )
    assert "Traceback (most recent call last)" in err
