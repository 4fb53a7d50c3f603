"""The ``tensorgate`` command as a user runs it: bad flags and bad config files fail clearly."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.gateway_proc import gateway_command, run_cli


def test_malformed_config_names_file_and_message_type(tmp_path: Path) -> None:
    config = tmp_path / "bad.config"
    config.write_text('model_config_list { config { nam: "x" } }\n')
    done = run_cli(f"--model_config_file={config}")
    assert done.returncode == 1
    assert "Error parsing text-format tensorflow.serving.ModelServerConfig" in done.stderr
    assert str(config) in done.stderr


def test_unknown_flag_is_refused() -> None:
    done = run_cli("--model_name=m", "--model_base_path=/m", "--no_such_flag=1")
    assert done.returncode == 2
    assert "--no_such_flag" in done.stderr


@pytest.mark.parametrize("flag", ["--prefer_tflite_model=true", "--use_alts_credentials"])
def test_unimplemented_flag_is_refused_not_ignored(flag: str) -> None:
    done = run_cli("--model_name=m", "--model_base_path=/m", flag)
    assert done.returncode == 2
    assert "not supported yet" in done.stderr


def test_unreadable_monitoring_config_fails_start_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "monitoring.config"
    config.write_text("prometheus_config { enable: maybe }\n")
    done = run_cli(
        "--model_name=m", f"--model_base_path={tmp_path}", f"--monitoring_config_file={config}"
    )
    assert done.returncode == 1
    assert "MonitoringConfig" in done.stderr and str(config) in done.stderr


def test_bad_otel_variables_fail_start_naming_them(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon",
    }
    done = subprocess.run(
        gateway_command(["--model_name=m", f"--model_base_path={tmp_path}"]),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 1
    assert "OTEL_EXPORTER_OTLP_PROTOCOL='carrier-pigeon'" in done.stderr


def test_space_separated_flag_values(tmp_path: Path) -> None:
    done = run_cli("--model_config_file", str(tmp_path / "missing.config"))
    assert done.returncode == 1
    assert "missing.config" in done.stderr


def test_help_lists_flags_with_defaults() -> None:
    done = run_cli("--help")
    assert done.returncode == 0
    assert "--port" in done.stdout and "8500" in done.stdout
