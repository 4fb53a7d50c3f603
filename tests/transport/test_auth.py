"""Bearer tokens, shared by the gRPC gate and the REST front: the file, the check, open paths;
the two roles (serving tokens, the admin credential) and who may change what is served."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.config.model_config import ConfigError
from gateway.config.settings import Settings
from gateway.errors import PermissionDenied, Unauthenticated
from gateway.transport.auth import BearerTokens, Roles, authorization_of, load_roles, load_tokens


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


def _roles(tmp_path: Path, serving: str | None, admin: str | None) -> Roles:
    files: dict[str, Any] = {}
    for flag, text in (("auth_token_file", serving), ("auth_admin_token_file", admin)):
        if text is not None:
            path = tmp_path / flag
            path.write_text(text)
            files[flag] = str(path)
    return load_roles(Settings(model_base_path="/m", **files))


def test_only_the_admin_credential_changes_what_is_served(tmp_path: Path) -> None:
    roles = _roles(tmp_path, "serve\n", "# ops\nadmin\n")
    assert roles.serving is not None
    roles.serving.check("Bearer serve")
    roles.serving.check("Bearer admin")  # an admin token serves as well
    roles.admin.check("Bearer admin")
    with pytest.raises(PermissionDenied, match="--auth_admin_token_file"):
        roles.admin.check("Bearer serve")
    for unknown in (None, "Bearer guess", "Basic admin", "admin"):
        with pytest.raises(Unauthenticated):
            roles.admin.check(unknown)


def test_serving_tokens_alone_let_nobody_change_what_is_served(tmp_path: Path) -> None:
    roles = _roles(tmp_path, "serve\n", None)
    for authorization in (None, "Bearer serve", "Bearer anything"):
        with pytest.raises(PermissionDenied):
            roles.admin.check(authorization)


def test_an_admin_credential_alone_guards_only_the_changes(tmp_path: Path) -> None:
    roles = _roles(tmp_path, None, "admin\n")
    assert roles.serving is None  # calls need no token
    roles.admin.check("Bearer admin")
    with pytest.raises(Unauthenticated):
        roles.admin.check(None)


def test_without_any_token_changes_are_open_as_in_tf_serving(tmp_path: Path) -> None:
    roles = _roles(tmp_path, None, None)
    assert roles.serving is None
    roles.admin.check(None)


def test_the_admin_credential_must_differ_from_every_serving_token(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must differ") as info:
        _roles(tmp_path, "one\nshared\n", "shared\n")
    assert "shared" not in str(info.value).replace("must differ", "")  # never quotes a token
    with pytest.raises(ConfigError, match="--auth_admin_token_file"):
        _roles(tmp_path, None, "# none\n")


def test_the_authorization_of_grpc_metadata() -> None:
    assert authorization_of((("x", "y"), ("authorization", "Bearer t"))) == "Bearer t"
    assert authorization_of((("authorization", b"binary"),)) is None
    assert authorization_of(None) is None
