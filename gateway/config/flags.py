"""tensorflow_model_server's command line → :class:`~gateway.config.settings.Settings`.

Syntax, as TF Serving's ``tensorflow::Flags`` (``tsl/util/command_line_flags.cc``):

- ``--name=value`` for every flag; also ``--name value`` (a tensorgate extension; the value may
  not start with ``--``);
- booleans: ``--name`` (true), ``--name=true|false`` (any case) or ``--name=1|0``; no ``--noname``;
- int32 / int64 / float values must parse completely; a repeated flag keeps its last value;
- ``--help`` (or ``-h``) writes the usage and ``--version`` the version lines to ``stdout`` and
  raise ``SystemExit(0)``.

Every flag of upstream ``tensorflow_serving/model_servers/main.cc`` is recognised:

- *implemented*: a :class:`Settings` field of the same name;
- *no effect*: tuning knobs of TF Serving's own thread pools and caches that have nothing to act
  on here; any value is accepted and an INFO line says so;
- *not supported yet*: accepted only with TF Serving's default value (logged at INFO); any other
  value raises ``FlagError("--<flag> is not supported yet by tensorgate ...")``.

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
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from gateway.config.settings import Settings, SettingsError, available_cpus

log = logging.getLogger(__name__)

PROGRAM = "tensorgate"

Kind = Literal["int32", "int64", "float", "bool", "string"]
Status = Literal["implemented", "no_effect", "unsupported", "version"]


class FlagError(ValueError):
    """The command line is wrong; the message names the flag and says what is expected."""


@dataclass(frozen=True)
class FlagSpec:
    """One command-line flag.

    ``default``: TF Serving's default (for implemented flags, the :class:`Settings` default is
    used instead). ``default_per_cpu``: when > 0, the default is this many times
    :func:`available_cpus` (TF Serving's ``N * NumSchedulableCPUs()`` defaults).
    ``note``: for *no effect* / *not supported* flags, what TF Serving does with it.
    """

    name: str
    kind: Kind
    status: Status
    default: bool | int | float | str = ""
    default_per_cpu: int = 0
    note: str = ""


def _impl(name: str, kind: Kind) -> FlagSpec:
    return FlagSpec(name, kind, "implemented")


def _no_effect(
    name: str, kind: Kind, default: bool | int | str, note: str, per_cpu: int = 0
) -> FlagSpec:
    return FlagSpec(name, kind, "no_effect", default, per_cpu, note)


def _unsupported(
    name: str, kind: Kind, default: bool | int | float | str, note: str, per_cpu: int = 0
) -> FlagSpec:
    return FlagSpec(name, kind, "unsupported", default, per_cpu, note)


FLAGS: dict[str, FlagSpec] = {
    spec.name: spec
    for spec in (
        # Upstream main.cc, in its order.
        _impl("port", "int32"),
        _impl("grpc_socket_path", "string"),
        _impl("rest_api_port", "int32"),
        _no_effect(
            "rest_api_num_threads",
            "int32",
            0,
            "threads of TF Serving's HTTP server; tensorgate serves REST on its event loop",
            per_cpu=4,
        ),
        _impl("rest_api_timeout_in_ms", "int32"),
        _impl("rest_api_enable_cors_support", "bool"),
        _impl("enable_batching", "bool"),
        _unsupported(
            "allow_version_labels_for_unavailable_models",
            "bool",
            False,
            "lets version_labels point at versions that are not loaded yet",
        ),
        _impl("batching_parameters_file", "string"),
        _impl("enable_per_model_batching_parameters", "bool"),
        _impl("model_config_file", "string"),
        _impl("model_config_file_poll_wait_seconds", "int32"),
        _impl("model_name", "string"),
        _impl("model_base_path", "string"),
        _no_effect(
            "num_load_threads", "int32", 0, "size of TF Serving's servable-loading thread pool"
        ),
        _no_effect(
            "num_unload_threads", "int32", 0, "size of TF Serving's servable-unloading thread pool"
        ),
        _unsupported(
            "max_num_load_retries", "int32", 5, "retries of a failed model load (TF default 5)"
        ),
        _unsupported(
            "load_retry_interval_micros",
            "int64",
            60_000_000,
            "pause between model load retries in microseconds (TF default 1 minute)",
        ),
        _impl("file_system_poll_wait_seconds", "int32"),
        _no_effect(
            "flush_filesystem_caches",
            "bool",
            True,
            "flushes TF's file-system caches after loads to save memory",
        ),
        _impl("tensorflow_session_parallelism", "int64"),
        _unsupported(
            "tensorflow_session_config_file",
            "string",
            "",
            "text-format TensorFlow ConfigProto for sessions",
        ),
        _impl("tensorflow_intra_op_parallelism", "int64"),
        _impl("tensorflow_inter_op_parallelism", "int64"),
        _unsupported("use_alts_credentials", "bool", False, "Google ALTS credentials for gRPC"),
        _impl("ssl_config_file", "string"),
        _unsupported(
            "platform_config_file",
            "string",
            "",
            "text-format PlatformConfigMap replacing the TensorFlow platform config",
        ),
        _unsupported(
            "per_process_gpu_memory_fraction",
            "float",
            0.0,
            "fraction of GPU memory TensorFlow allocates (0 = automatic)",
        ),
        _impl("saved_model_tags", "string"),
        _impl("grpc_channel_arguments", "string"),
        _impl("grpc_max_threads", "int32"),
        _impl("enable_model_warmup", "bool"),
        _unsupported(
            "num_request_iterations_for_warmup",
            "int32",
            0,
            "times each warmup request is replayed (used only if > 0)",
        ),
        FlagSpec("version", "bool", "version", False, 0, "print the version and exit"),
        _impl("monitoring_config_file", "string"),
        _no_effect(
            "remove_unused_fields_from_bundle_metagraph",
            "bool",
            True,
            "drops unused MetaGraphDef fields after a TensorFlow load to save memory",
        ),
        _unsupported(
            "prefer_tflite_model", "bool", False, "serve model.tflite instead of saved_model.pb"
        ),
        _unsupported(
            "num_tflite_pools", "int32", 0, "TF Lite interpreter pools per model", per_cpu=1
        ),
        _unsupported(
            "num_tflite_interpreters_per_pool", "int32", 1, "TF Lite interpreters in each pool"
        ),
        _impl("enable_signature_method_name_check", "bool"),
        _unsupported("xla_cpu_compilation_enabled", "bool", False, "XLA:CPU JIT compilation"),
        _unsupported(
            "xla_gpu_compilation_enabled", "bool", False, "XLA:CPU and XLA:GPU JIT compilation"
        ),
        _unsupported("enable_profiler", "bool", True, "TensorFlow profiler gRPC service"),
        _unsupported(
            "thread_pool_factory_config_file",
            "string",
            "",
            "text-format ThreadPoolConfig for TensorFlow's inference thread pools",
        ),
        _unsupported("mixed_precision", "string", "", "mixed precision mode of TensorFlow"),
        _unsupported("skip_initialize_tpu", "bool", False, "skips TPU system initialisation"),
        _no_effect(
            "enable_grpc_healthcheck_service",
            "bool",
            False,
            "tensorgate always serves grpc.health.v1 (per-model readiness for probes)",
        ),
        _impl("enable_serialization_as_tensor_content", "bool"),
        # tensorgate's own flags.
        _impl("workers", "int32"),
        _impl("max_message_bytes", "int64"),
        _impl("rest_api_max_body_bytes", "int64"),
        _impl("worker_arena_mb", "int32"),
        _impl("worker_ping_interval_seconds", "float"),
        _impl("worker_ping_timeout_seconds", "float"),
        _impl("max_tensor_elements", "int64"),
        _impl("shutdown_grace_seconds", "float"),
        _impl("ready_fd", "int32"),
    )
}

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


def _help_text(spec: FlagSpec) -> str:
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
        lines.append(f"\t{flag:<33}\t{spec.kind}\t{_help_text(spec)}")
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


NOT_BUILT_YET: dict[str, bool | int | str] = {
    "model_config_file_poll_wait_seconds": 0,
    "ssl_config_file": "",
    "monitoring_config_file": "",
}
"""Flags that parse and validate but whose feature the server does not have yet, with the value
that asks for nothing. Any other value is refused at start, never silently ignored."""


def check_built(settings: Settings) -> None:
    """Raise FlagError for a flag in :data:`NOT_BUILT_YET` given a value that asks for more."""
    for name, idle in NOT_BUILT_YET.items():
        value = getattr(settings, name)
        if value != idle:
            raise FlagError(
                f"--{name}={value} is not supported yet by tensorgate "
                f"(its feature is not built yet; leave it at {idle!r})"
            )
