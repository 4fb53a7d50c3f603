"""Optional bearer-token authentication, shared by gRPC and REST, with two roles.

A client sends ``authorization: Bearer <token>`` (gRPC metadata or HTTP header). Tokens come
from files, one per line, blank lines and ``#`` comments ignored, each compared in constant time
(:func:`hmac.compare_digest`, against every token, without an early exit). No answer says which
tokens exist, and no error quotes a token file.

- **Serving tokens** (``--auth_token_file``): every call needs one (or an admin token), except
  the paths in ``--auth_open_paths``: an exact REST path (``/healthz``) or gRPC method
  (``/grpc.health.v1.Health/Check``), or a prefix when the entry ends with ``/``
  (``/grpc.health.v1.Health/``). A missing or wrong token is UNAUTHENTICATED (HTTP 401). The
  front doors check them (:class:`BearerTokens`: :mod:`~gateway.transport.gate`,
  :mod:`~gateway.transport.http.front`).
- **The admin credential** (``--auth_admin_token_file``; none of its tokens may be a serving
  token): only it may change what is served — HandleReloadConfigRequest and V2's repository load
  and unload, each of which asks :class:`AdminAccess` before anything else, whatever path
  matching the front doors do. A serving token there is PERMISSION_DENIED (403), a missing or
  unknown one UNAUTHENTICATED. With serving tokens but no admin credential those calls are
  refused (PERMISSION_DENIED) even with ``--enable_model_management_api``; with no token file at
  all they are open, as in TF Serving.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gateway.config import secret_errors
from gateway.config.model_config import ConfigError
from gateway.config.settings import Settings
from gateway.errors import PermissionDenied, Unauthenticated

SCHEME = "bearer"
AUTHORIZATION = "authorization"
"""The gRPC metadata key (lower case) and HTTP header (any case) carrying the token."""

NEEDS_ADMIN = (
    "changing the served models needs the admin credential (--auth_admin_token_file); "
    "serving tokens cannot"
)


def _read(path: str) -> list[str]:
    """The tokens of a file (OSError if unreadable, ValueError if it holds none or is not UTF-8;
    no error quotes the file)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: {secret_errors.not_utf8(exc)}") from None
    tokens = [line.strip() for line in lines]
    tokens = [token for token in tokens if token and not token.startswith("#")]
    if not tokens:
        raise ValueError(f"{path} holds no token")
    return tokens


def _presented(authorization: str | None) -> bytes | None:
    """The token of an ``authorization`` value, None unless it is ``Bearer <token>``."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != SCHEME:
        return None
    return token.strip().encode()


class BearerTokens:
    """The accepted tokens and the paths open without one."""

    def __init__(self, tokens: Iterable[str], open_paths: Iterable[str] = ()) -> None:
        self._tokens = tuple(token.encode() for token in tokens)
        if not self._tokens:
            raise ValueError("at least one token is needed")
        paths = [p for p in open_paths if p]
        self._open_exact = frozenset(p for p in paths if not p.endswith("/"))
        self._open_prefixes = tuple(p for p in paths if p.endswith("/"))

    @classmethod
    def load(cls, path: str, open_paths: Iterable[str] = ()) -> BearerTokens:
        """Tokens from a file (OSError if unreadable, ValueError if it holds none or is not
        UTF-8; no error quotes the file)."""
        return cls(_read(path), open_paths)

    def is_open(self, path: str) -> bool:
        """True when ``path`` (a REST path or a gRPC method path) needs no token."""
        return path in self._open_exact or path.startswith(self._open_prefixes)

    def accepts(self, authorization: str | None) -> bool:
        """True when the ``authorization`` value carries one of the tokens."""
        presented = _presented(authorization)
        valid = False
        for expected in self._tokens:
            valid |= hmac.compare_digest(presented or b"", expected)
        return presented is not None and valid

    def check(self, authorization: str | None) -> None:
        """Raise :class:`Unauthenticated` unless the ``authorization`` value carries a token."""
        if authorization is None:
            raise Unauthenticated("this server requires a bearer token (authorization header)")
        if not self.accepts(authorization):
            raise Unauthenticated("the bearer token is not valid")


class AdminAccess:
    """Who may change what is served (see the module doc): the holders of ``admin`` tokens
    (None: nobody when ``serving`` tokens are configured, everybody when neither is)."""

    def __init__(
        self, admin: BearerTokens | None = None, serving: BearerTokens | None = None
    ) -> None:
        self._admin = admin
        self._serving = serving

    def check(self, authorization: str | None) -> None:
        """Raise unless the ``authorization`` value (None: none sent) may change what is served:
        PERMISSION_DENIED for a serving token or when no admin credential exists,
        UNAUTHENTICATED for a missing or unknown token."""
        if self._admin is None:
            if self._serving is None:
                return
            raise PermissionDenied(NEEDS_ADMIN)
        if self._admin.accepts(authorization):
            return
        if self._serving is not None and self._serving.accepts(authorization):
            raise PermissionDenied(NEEDS_ADMIN)
        if authorization is None:
            raise Unauthenticated("changing the served models needs the admin bearer token")
        raise Unauthenticated("the bearer token is not valid")


def authorization_of(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """The ``authorization`` value of a gRPC call's invocation metadata (None: none)."""
    for key, value in metadata or ():
        if key == AUTHORIZATION:
            return value if isinstance(value, str) else None
    return None


@dataclass(frozen=True)
class Roles:
    """The tokens of both roles: ``serving``, what the front doors accept (serving and admin
    tokens; None: calls need no token), and ``admin``, who may change what is served."""

    serving: BearerTokens | None = None
    admin: AdminAccess = field(default_factory=AdminAccess)


def load_roles(settings: Settings) -> Roles:
    """The roles ``--auth_token_file``, ``--auth_admin_token_file`` and ``--auth_open_paths``
    give; ConfigError when a file cannot be read, holds no token, or the files share a token."""
    serving = _load(settings.auth_token_file, "auth_token_file")
    admin = _load(settings.auth_admin_token_file, "auth_admin_token_file")
    if set(serving) & set(admin):
        raise ConfigError(
            "--auth_admin_token_file: a token is also in --auth_token_file; the admin credential "
            "must differ from every serving token"
        )
    open_paths = [p.strip() for p in settings.auth_open_paths.split(",")]
    return Roles(
        BearerTokens([*serving, *admin], open_paths) if serving else None,
        AdminAccess(
            BearerTokens(admin) if admin else None, BearerTokens(serving) if serving else None
        ),
    )


def load_tokens(settings: Settings) -> BearerTokens | None:
    """The tokens the front doors accept (:attr:`Roles.serving`; None: no authentication)."""
    return load_roles(settings).serving


def _load(path: str, flag: str) -> list[str]:
    if not path:
        return []
    try:
        return _read(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--{flag}: {exc}") from None
