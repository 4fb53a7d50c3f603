"""The ``tensorgate`` command refusing a malformed ``--ssl_config_file`` or ``--auth_token_file``
says where the file is wrong and never prints any of it (a private key
written on one line with ``\\n`` escapes but no closing quote appeared, whole, twice on stderr).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.certs import make_pki
from tests.support.gateway_proc import run_cli

MARKER = "SECRET-MARKER-c41d07"


def _secret_lines(pem: bytes) -> list[str]:
    """The base64 lines of a PEM text (what must never be shown)."""
    return [line for line in pem.decode().splitlines() if line and not line.startswith("-----")]


def _args(model_repo: Path) -> list[str]:
    return ["--model_name=mlp", f"--model_base_path={model_repo / 'mlp'}", "--workers=1"]


def test_an_ssl_config_whose_key_lacks_its_closing_quote_is_never_printed(
    model_repo: Path, tmp_path: Path
) -> None:
    key = make_pki().server.key.replace(b"-----\n", f"-----\n{MARKER}\n".encode(), 1)
    one_line = key.decode().replace("\n", "\\n")
    config = tmp_path / "ssl.config"
    config.write_text(f'server_key: "{one_line}\nserver_cert: "CERT"\n')
    done = run_cli(*_args(model_repo), f"--ssl_config_file={config}")
    assert done.returncode == 1, done.stderr
    printed = done.stdout + done.stderr
    assert MARKER not in printed
    for line in _secret_lines(key):
        assert line not in printed
    assert (
        f"Error parsing text-format tensorflow.serving.SSLConfig in {config}: "
        "line 1, column 13, field server_key: a string lacks its closing quote"
    ) in done.stderr


def test_a_token_file_that_is_not_utf8_is_never_printed(model_repo: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_bytes(f"{MARKER}-".encode() + b"\xff\xfe\n")
    done = run_cli(*_args(model_repo), f"--auth_token_file={tokens}")
    assert done.returncode == 1, done.stderr
    printed = done.stdout + done.stderr
    assert MARKER not in printed and "0xff" not in printed
    column = len(MARKER) + 2
    assert f"--auth_token_file: {tokens}: line 1, column {column}: not UTF-8 text" in done.stderr
