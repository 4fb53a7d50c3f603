"""The words of the rules on settings: their error, a range check, and the parser of gRPC
channel arguments. The rules themselves run when a :class:`~gateway.config.settings.Settings`
is built; a :class:`SettingsError` names the field, the rule and the value, e.g. ``port must be
in 0..65535, got 70000``.
"""

from __future__ import annotations

import math
import re

INT32_MAX = 2**31 - 1
LOG_FORMATS = ("text", "json")
INLINE_RUNS = ("auto", "always", "never")
MAX_IMAGE_PIXELS = 89_478_485
"""Pillow's own decompression-bomb bound (``PIL.Image.MAX_IMAGE_PIXELS``): past it Pillow warns
(and past twice it refuses), so ``--max_image_pixels`` stays within it."""
"""--inline_runs: where light models run (:mod:`gateway.runs.inline_cost`)."""


class SettingsError(ValueError):
    """A setting is out of range or contradicts another one; the message says which and why."""


_INT32 = re.compile(r"[+-]?\d+")


def parse_grpc_channel_arguments(text: str) -> tuple[tuple[str, int | str], ...]:
    """Split ``key=value,key=value`` into gRPC options; int32-looking values become ints.

    Empty items (a trailing comma) are skipped; an item without ``=`` or with an empty key raises
    :class:`SettingsError`. A value may itself contain ``=`` (split on the first one).
    """
    options: list[tuple[str, int | str]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SettingsError(
                f"grpc_channel_arguments must be comma-separated key=value pairs, got {item!r}"
            )
        stripped = value.strip()
        if _INT32.fullmatch(stripped) and -(2**31) <= int(stripped) <= INT32_MAX:
            options.append((key, int(stripped)))
        else:
            options.append((key, value))
    return tuple(options)


def split_dirs(text: str) -> tuple[str, ...]:
    """A comma-separated list of directories, each stripped; empty items skipped."""
    return tuple(item.strip() for item in text.split(",") if item.strip())


def check_range(name: str, value: float, low: int, high: int | None = None) -> None:
    """Raise unless ``low <= value <= high`` (``high`` None: no upper bound)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SettingsError(f"{name} must be a finite number, got {value}")
    if high is None:
        if value < low:
            raise SettingsError(f"{name} must be >= {low}, got {value}")
    elif not low <= value <= high:
        raise SettingsError(f"{name} must be in {low}..{high}, got {value}")


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
