"""Where a management call may point the server: inside the directories the operator listed at
start.

HandleReloadConfigRequest replaces the served config with the caller's. Its models'
``base_path`` says what the server reads (model files) and their ``logging_config``
``filename_prefix`` where it writes (callers' tensors, verbatim). A management call — never the
operator's own ``--model_config_file``, at start or re-read — may set:

- a local ``base_path`` only inside a directory ``--management_base_path_dirs`` lists
  (:meth:`ManagementPaths.check_base_path`, the one check of a base path a management call sets).
  An object-store URL (``s3://``, ``gs://``, ``az://``) is not a local path: the store's own
  credentials govern what it can read;
- a ``filename_prefix`` only whose directory is inside one ``--management_log_dirs`` lists
  (:meth:`ManagementPaths.check_log_prefix`);
- either one exactly as it already is in force (:meth:`ManagementPaths.keeping`: the operator's
  config, or an earlier management call's, checked then).

Paths are compared once symlinks and ``..`` are resolved (:func:`os.path.realpath`), so a link
inside a listed directory that leads out of it is outside. The checks run before anything looks
at the path for its own sake (no probe file, no version listing), and their problems name the
flag, never the path: a caller learns nothing of the file system outside the listed directories.
The listed directories should be writable by the operator only: a symlink planted in one later
would move what the server reads or writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from gateway.config.validation import split_dirs

URL_MARK = "://"
"""What makes a base path an object-store URL rather than a local path."""


class _Logging(Protocol):
    @property
    def filename_prefix(self) -> str: ...


class _Spec(Protocol):
    """What of a :class:`~gateway.config.model_config.ModelSpecConfig` a kept path is."""

    @property
    def base_path(self) -> str: ...

    @property
    def logging(self) -> _Logging | None: ...


def _inside(path: str, directories: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d.rstrip("/") + "/") for d in directories)


@dataclass(frozen=True)
class ManagementPaths:
    """The directories (resolved) a management call may set base paths and log prefixes under,
    and the ones in force it may keep."""

    base_path_dirs: tuple[str, ...] = ()
    log_dirs: tuple[str, ...] = ()
    kept_base_paths: frozenset[str] = field(default_factory=frozenset)
    kept_prefixes: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_flags(cls, base_path_dirs: str, log_dirs: str) -> ManagementPaths:
        """From ``--management_base_path_dirs`` and ``--management_log_dirs`` (comma-separated
        absolute directories)."""
        return cls(
            tuple(os.path.realpath(d) for d in split_dirs(base_path_dirs)),
            tuple(os.path.realpath(d) for d in split_dirs(log_dirs)),
        )

    def keeping(self, specs: Iterable[_Spec]) -> ManagementPaths:
        """These rules, also letting a call keep the base paths and prefixes of ``specs`` (the
        config in force)."""
        specs = list(specs)
        return replace(
            self,
            kept_base_paths=frozenset(s.base_path for s in specs),
            kept_prefixes=frozenset(s.logging.filename_prefix for s in specs if s.logging),
        )

    def check_base_path(self, path: str) -> str | None:
        """Why a management call may not set ``path`` as a model's base path (None: it may)."""
        if URL_MARK in path or path in self.kept_base_paths:
            return None
        if _inside(path, self.base_path_dirs):
            return None
        return _outside("base_path", "management_base_path_dirs", self.base_path_dirs)

    def check_log_prefix(self, prefix: str) -> str | None:
        """Why a management call may not set ``prefix`` as a request log's ``filename_prefix``
        (None: it may)."""
        if prefix in self.kept_prefixes:
            return None
        if _inside(os.path.dirname(prefix), self.log_dirs):
            return None
        return _outside("filename_prefix", "management_log_dirs", self.log_dirs)


def _outside(what: str, flag: str, listed: tuple[str, ...]) -> str:
    if not listed:
        return (
            f"{what} may only be one already in force: a management call may set new ones "
            f"only under a directory --{flag} lists, and it lists none"
        )
    return f"{what} is outside the directories --{flag} lists"
