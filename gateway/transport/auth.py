"""Optional bearer-token authentication, shared by gRPC and REST.

A client sends ``authorization: Bearer <token>`` (gRPC metadata or HTTP header). The tokens
come from ``--auth_token_file``: one per line, blank lines and ``#`` comments ignored. Each is
compared in constant time (:func:`hmac.compare_digest`, against every token, without an early
exit). Paths in ``--auth_open_paths`` need no token: an exact REST path (``/healthz``) or gRPC
method (``/grpc.health.v1.Health/Check``), or a prefix when the entry ends with ``/``
(``/grpc.health.v1.Health/``). A missing or wrong token is UNAUTHENTICATED (HTTP 401); the
answer never says which tokens exist.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from pathlib import Path

from gateway.config import secret_errors
from gateway.config.model_config import ConfigError
from gateway.config.settings import Settings
from gateway.errors import Unauthenticated

SCHEME = "bearer"


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
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: {secret_errors.not_utf8(exc)}") from None
        tokens = [line.strip() for line in lines]
        tokens = [token for token in tokens if token and not token.startswith("#")]
        if not tokens:
            raise ValueError(f"{path} holds no token")
        return cls(tokens, open_paths)

    def is_open(self, path: str) -> bool:
        """True when ``path`` (a REST path or a gRPC method path) needs no token."""
        return path in self._open_exact or path.startswith(self._open_prefixes)

    def check(self, authorization: str | None) -> None:
        """Raise :class:`Unauthenticated` unless the ``authorization`` value carries a token."""
        if authorization is None:
            raise Unauthenticated("this server requires a bearer token (authorization header)")
        scheme, _, token = authorization.strip().partition(" ")
        presented = token.strip().encode()
        valid = False
        for expected in self._tokens:
            valid |= hmac.compare_digest(presented, expected)
        if scheme.lower() != SCHEME or not valid:
            raise Unauthenticated("the bearer token is not valid")


def load_tokens(settings: Settings) -> BearerTokens | None:
    """The tokens ``--auth_token_file`` names (None: no authentication); ConfigError when the
    file cannot be read or holds no token."""
    if not settings.auth_token_file:
        return None
    open_paths = [p.strip() for p in settings.auth_open_paths.split(",")]
    try:
        return BearerTokens.load(settings.auth_token_file, open_paths)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--auth_token_file: {exc}") from None
