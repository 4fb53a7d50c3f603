"""tensorflow_model_server's command line → :class:`~gateway.config.settings.Settings`.

Syntax, as TF Serving's ``tensorflow::Flags`` (``tsl/util/command_line_flags.cc``):

- ``--name=value`` for every flag; also ``--name value`` (a tensorgate extension; the value may
  not start with ``--``);
- booleans: ``--name`` (true), ``--name=true|false`` (any case) or ``--name=1|0``; no ``--noname``;
- int32 / int64 / float values must parse completely; a repeated flag keeps its last value;
- ``--help`` (or ``-h``) writes the usage and ``--version`` the version lines to ``stdout`` and
  raise ``SystemExit(0)``.

Every flag of upstream ``tensorflow_serving/model_servers/main.cc`` is recognised
(:mod:`gateway.config.flag_table` lists them): a *not supported yet* flag is accepted only with TF
Serving's default value (logged at INFO); any other value raises
``FlagError("--<flag> is not supported yet by tensorgate ...")``.

Unknown flags, stray arguments and unparsable values raise :class:`FlagError`;
``gateway.main`` turns it into exit status 2 and one line on stderr.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.metadata
import logging
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from gateway.config.flag_table import FLAGS, FlagSpec, Kind
from gateway.config.machine import available_cpus
from gateway.config.settings import Settings
from gateway.config.validation import SettingsError

log = logging.getLogger(__name__)

PROGRAM = "tensorgate"


class FlagError(ValueError):
    """The command line is wrong; the message names the flag and says what is expected."""


_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_SETTINGS_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}


def parse_flags(argv: Sequence[str], *, stdout: TextIO | None = None) -> Settings:
    """Parse ``argv`` (without the program name) into validated :class:`Settings`.

    Raises :class:`FlagError` for any mistake; writes usage / version text to ``stdout``
    (default ``sys.stdout``) and raises ``SystemExit(0)`` for ``--help`` / ``--version``.
    """
    out = sys.stdout if stdout is None else stdout
    given: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg in ("--help", "-h"):
            out.write(usage())
            raise SystemExit(0)
        if arg == "--" or not arg.startswith("--"):
            raise FlagError(f"unexpected argument {arg!r}: flags are written --name=value")
        name, sep, raw = arg[2:].partition("=")
        spec = FLAGS.get(name)
        if spec is None:
            raise FlagError(_unknown_flag_message(name))
        if not sep and spec.kind != "bool":
            if i >= len(argv) or argv[i].startswith("--"):
                raise FlagError(f"--{name} needs a value: --{name}=VALUE")
            raw = argv[i]
            i += 1
        value = True if not sep and spec.kind == "bool" else _parse_value(spec, raw)
        given[name] = value

    if given.get("version"):
        out.write(version_text())
        raise SystemExit(0)

    values: dict[str, Any] = {}
    for name, value in given.items():
        spec = FLAGS[name]
        shown = _display(spec.kind, value)
        if spec.status == "implemented":
            values[name] = value
        elif spec.status == "no_effect":
            log.info("--%s=%s accepted; it has no effect in tensorgate: %s", name, shown, spec.note)
        elif spec.status == "unsupported":
            default = flag_default(spec)
            if value != default:
                raise FlagError(
                    f"--{name} is not supported yet by tensorgate ({spec.note}); "
                    f"only its default {_display(spec.kind, default)} is accepted, got {shown}"
                )
            log.info("--%s=%s is TF Serving's default; accepted", name, shown)

    _warn_ignored(values)
    try:
        return Settings(**values)
    except SettingsError as exc:
        raise FlagError(str(exc)) from exc


def _parse_value(spec: FlagSpec, raw: str) -> bool | int | float | str:
    """``raw`` as the flag's type, or FlagError naming the flag and the type."""
    if spec.kind == "string":
        return raw
    if spec.kind == "bool":
        lowered = raw.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise FlagError(f"--{spec.name} expects true, false, 1 or 0, got {raw!r}")
    if spec.kind == "float":
        try:
            return float(raw)
        except ValueError:
            raise FlagError(f"--{spec.name} expects a number, got {raw!r}") from None
    low, high = _INT_RANGES[spec.kind]
    text = raw.lstrip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit() or not low <= int(text) <= high:
        raise FlagError(f"--{spec.name} expects an {spec.kind} integer, got {raw!r}")
    return int(text)


def _unknown_flag_message(name: str) -> str:
    close = difflib.get_close_matches(name, FLAGS, n=1)
    hint = f" (did you mean --{close[0]}?)" if close else ""
    return f"unknown flag --{name}{hint}; --help lists the flags"


def _warn_ignored(values: dict[str, Any]) -> None:
    """Log combinations TF Serving accepts but ignores, so nobody is surprised."""
    if values.get("model_config_file"):
        ignored = [f"--{n}" for n in ("model_name", "model_base_path") if n in values]
        if ignored:
            log.warning("%s ignored because --model_config_file is set", " and ".join(ignored))
    elif values.get("model_config_file_poll_wait_seconds"):
        log.warning("--model_config_file_poll_wait_seconds ignored: no --model_config_file")
    if values.get("enable_per_model_batching_parameters") and not values.get("enable_batching"):
        log.warning("--enable_per_model_batching_parameters ignored: --enable_batching is off")


def flag_default(spec: FlagSpec) -> bool | int | float | str:
    """The value a flag has when it is not given (on this machine, for CPU-derived defaults)."""
    if spec.status == "implemented":
        settings_field = _SETTINGS_FIELDS[spec.name]
        if settings_field.default_factory is not dataclasses.MISSING:
            value: bool | int | float | str = settings_field.default_factory()
            return value
        default: bool | int | float | str = settings_field.default  # type: ignore[assignment]
        return default
    if spec.default_per_cpu:
        return spec.default_per_cpu * available_cpus()
    return spec.default


def _display(kind: Kind, value: bool | int | float | str) -> str:
    if kind == "bool":
        return "true" if value else "false"
    if kind == "string":
        return f'"{value}"'
    return str(value)


def flag_help(spec: FlagSpec) -> str:
    """What ``--help`` says of a flag: its setting's description, or its status and note."""
    if spec.status == "implemented":
        doc: str = _SETTINGS_FIELDS[spec.name].metadata["doc"]
        return doc
    if spec.status == "no_effect":
        return f"[accepted, no effect in tensorgate] {spec.note}."
    if spec.status == "unsupported":
        return f"[not supported yet: only the default is accepted] {spec.note}."
    return "Print the version and exit."


def usage(program: str = PROGRAM) -> str:
    """The ``--help`` text: every flag with its default, type and meaning (TF Serving's layout)."""
    lines = [
        f"usage: {program} --model_base_path=PATH | --model_config_file=FILE [flags]",
        "Flags:",
    ]
    for spec in FLAGS.values():
        flag = f"--{spec.name}={_display(spec.kind, flag_default(spec))}"
        lines.append(f"\t{flag:<33}\t{spec.kind}\t{flag_help(spec)}")
    return "\n".join(lines) + "\n"


def _package_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def version_text() -> str:
    """The ``--version`` lines, in TF Serving's ``TensorFlow ModelServer: ...`` form."""
    tensorgate = _package_version("tensorgate") or "unknown"
    tensorflow = _package_version("tensorflow") or "not installed"
    onnxruntime = _package_version("onnxruntime") or "not installed"
    return (
        f"TensorFlow ModelServer: tensorgate-{tensorgate}\n"
        f"TensorFlow Library: {tensorflow}\n"
        f"ONNX Runtime Library: {onnxruntime}\n"
    )
