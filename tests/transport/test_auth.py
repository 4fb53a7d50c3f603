"""Bearer tokens, shared by the gRPC gate and the REST front: the file, the check, open paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.model_config import ConfigError
from gateway.config.settings import Settings
from gateway.errors import Unauthenticated
from gateway.transport.auth import BearerTokens, load_tokens


def test_bearer_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# the team's tokens\nalpha\n\n  beta  \n")
    tokens = BearerTokens.load(str(path), ["/healthz", "/grpc.health.v1.Health/", ""])
    tokens.check("Bearer alpha")
    tokens.check("bearer beta")
    for bad in (None, "Bearer gamma", "Basic alpha", "Bearer", "alpha", "Bearer alph"):
        with pytest.raises(Unauthenticated):
            tokens.check(bad)
    assert tokens.is_open("/healthz") and tokens.is_open("/grpc.health.v1.Health/Check")
    assert not tokens.is_open("/healthz/x") and not tokens.is_open("/v1/models/m")
    path.write_text("# nothing\n\n")
    with pytest.raises(ValueError, match="holds no token"):
        BearerTokens.load(str(path))


def test_the_flags_name_the_file_and_the_open_paths(tmp_path: Path) -> None:
    assert load_tokens(Settings(model_base_path="/m")) is None
    path = tmp_path / "tokens"
    path.write_text("alpha\n")
    settings = Settings(
        model_base_path="/m", auth_token_file=str(path), auth_open_paths="/healthz, /readyz"
    )
    tokens = load_tokens(settings)
    assert tokens is not None
    tokens.check("Bearer alpha")
    assert tokens.is_open("/readyz") and not tokens.is_open("/v1/models/m")
    for broken in (tmp_path / "missing", tmp_path / "empty"):
        if broken.name == "empty":
            broken.write_text("# none\n")
        with pytest.raises(ConfigError, match="--auth_token_file"):
            load_tokens(Settings(model_base_path="/m", auth_token_file=str(broken)))


def test_no_token_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one token"):
        BearerTokens([])
