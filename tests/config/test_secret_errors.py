"""Errors about files that hold secrets name the file, the position and the field, never any of
their content: ``--ssl_config_file`` (a private key) and
``--auth_token_file`` (bearer tokens)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.model_config import ConfigError, load_model_server_config, load_ssl_config
from gateway.transport.auth import BearerTokens

MARKER = "SECRET-MARKER-7f3a9c"
KEY = f"-----BEGIN PRIVATE KEY-----\\nMIGHAgEAMBMGByqGSM49{MARKER}\\n-----END PRIVATE KEY-----\\n"
"""A key as an SSLConfig holds it on one line, ``\\n`` escapes and all (the marker inside)."""
SHOWN_NOT = "(the file's content is not shown: it holds secrets)"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        pytest.param(  # the file: the key on one line without its closing quote
            f'server_key: "{KEY}\nserver_cert: "CERT"\n',
            "line 1, column 13, field server_key: a string lacks its closing quote",
            id="unclosed-quote",
        ),
        pytest.param(
            f'server_cert: "CERT"\ncustom_ca: "{MARKER}\n-----END"\n',
            "line 2, column 12, field custom_ca: a string lacks its closing quote",
            id="raw-newline-in-a-string",
        ),
        pytest.param(
            f'server_key: "{KEY}" {MARKER}\n',
            f"line 1, column {16 + len(KEY)}: a name that is not a field of the message",
            id="content-read-as-a-field-name",
        ),
        pytest.param(
            f"server_key: {MARKER}\n",
            "line 1, column 13, field server_key: not valid text format",
            id="unquoted-value",
        ),
        pytest.param(
            f'server_key: "A"\nserver_key: "{KEY}"\n',
            "line 2, column 13, field server_key: a field set more than once",
            id="repeated-field",
        ),
        pytest.param(
            f"client_verify: {MARKER}\n",
            "line 1, column 16, field client_verify: not valid text format",
            id="not-a-bool",
        ),
    ],
)
def test_ssl_config_parse_errors_name_position_and_field_only(
    tmp_path: Path, text: str, where: str
) -> None:
    path = tmp_path / "ssl.config"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_ssl_config(path)
    message = str(info.value)
    assert message == (
        f"Error parsing text-format tensorflow.serving.SSLConfig in {path}: {where} {SHOWN_NOT}"
    )
    assert MARKER not in message and "MIGHAgEA" not in message


def test_ssl_config_that_is_not_utf8_is_located_not_quoted(tmp_path: Path) -> None:
    path = tmp_path / "ssl.config"
    path.write_bytes(f'server_cert: "CERT"\nserver_key: "{MARKER}'.encode() + b'\xe9\xff"\n')
    with pytest.raises(ConfigError) as info:
        load_ssl_config(path)
    message = str(info.value)
    where = f"line 2, column {14 + len(MARKER)}, field server_key: not UTF-8 text"
    assert message.endswith(f"SSLConfig in {path}: {where} {SHOWN_NOT}")
    assert MARKER not in message and "0xe9" not in message


def test_files_without_secrets_still_quote_what_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "models.config"
    path.write_text('model_config_list { config { nam: "x" } }\n')
    with pytest.raises(ConfigError, match='has no field named "nam"'):
        load_model_server_config(path)


def test_token_file_that_is_not_utf8_is_located_not_quoted(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_bytes(f"# tokens\n{MARKER}".encode() + b"\xff\n")
    with pytest.raises(ValueError) as info:
        BearerTokens.load(str(path))
    assert str(info.value) == (
        f"{path}: line 2, column {len(MARKER) + 1}: not UTF-8 text {SHOWN_NOT}"
    )
