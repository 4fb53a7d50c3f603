"""TF Serving's text-format config files → validated protos, and the models to serve as plain data.

Loaders (each raises :class:`ConfigError` naming the file and the message type):
:func:`load_model_server_config` (``--model_config_file``), :func:`load_batching_parameters`
(``--batching_parameters_file``, per-model ``batching_params.pbtxt``),
:func:`load_monitoring_config` (``--monitoring_config_file``), :func:`load_ssl_config`
(``--ssl_config_file``). :func:`model_server_config_from_flags` builds the config of a command
line. :func:`model_specs` turns a ``ModelServerConfig`` into :class:`ModelSpecConfig` values, so
nothing else in the gateway reads those proto fields.

ModelServerConfig rules, as TF Serving's ServerCore unless marked:

- ``model_config_list`` lists the models; an empty file serves no models (upstream: "taking no
  action for empty config"); ``custom_model_config`` is refused (upstream: fatal).
- Names are non-empty (tensorgate) and unique ("Illegal to list model m multiple times in config
  list"); base paths are absolute ("Expected model m to have an absolute path or URI; got
  base_path()=...") or object URLs this gateway reads (``s3://``, ``gs://``, ``az://``:
  :mod:`gateway.storage.urls`).
- The ``--model_config_file`` itself may be an object URL: it is read from its store.
- ``model_platform``: ``""`` (detect from the files, tensorgate), ``"onnx"`` (tensorgate) or
  ``"tensorflow"``; the deprecated ``model_type: TENSORFLOW`` means ``"tensorflow"``.
- Version policy: none set means ``latest`` 1; ``latest.num_versions`` 0 also means 1 (upstream
  ``max(num_versions, 1)``); ``specific.versions`` must be non-empty and >= 0 (tensorgate).
- ``version_labels``: non-empty labels, versions >= 0 (whether a label may name a version that
  is not available is the model manager's rule, TF Serving's).
- ``logging_config``: checked by :mod:`gateway.config.request_logging` (collector type, sampling
  rate in [0, 1], a prefix where files can be created).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Literal, TypeVar

from google.protobuf import message, text_format

from gateway._pb.tensorflow_serving.config import (
    model_server_config_pb2,
    monitoring_config_pb2,
    ssl_config_pb2,
)
from gateway._pb.tensorflow_serving.servables.tensorflow import session_bundle_config_pb2
from gateway.config import secret_errors
from gateway.config.management_paths import ManagementPaths
from gateway.config.request_logging import RequestLogging, request_logging
from gateway.config.settings import Settings
from gateway.errors import ServingError
from gateway.storage import urls
from gateway.storage.failures import StoreError
from gateway.storage.stores import read_object

ModelServerConfig = model_server_config_pb2.ModelServerConfig
BatchingParameters = session_bundle_config_pb2.BatchingParameters
MonitoringConfig = monitoring_config_pb2.MonitoringConfig
SSLConfig = ssl_config_pb2.SSLConfig

PLATFORMS = ("", "onnx", "tensorflow")
"""Accepted ``model_platform`` values; ``""`` means detect from the version directory."""

PolicyKind = Literal["latest", "all", "specific"]

_Invalid = Callable[[str], "ConfigError"]
_M = TypeVar("_M", bound=message.Message)


class ConfigError(ValueError):
    """A config file cannot be read, parsed or accepted; the message names the file and type."""


@dataclasses.dataclass(frozen=True)
class ModelSpecConfig:
    """One model to serve, as plain validated data.

    ``platform``: ``"onnx"``, ``"tensorflow"`` or ``""`` (detect from the files).
    ``policy``: which versions on disk to serve — ``"latest"`` (the ``num_versions`` highest,
    ``num_versions >= 1``), ``"all"``, or ``"specific"`` (exactly ``versions``, sorted, unique,
    non-empty). ``num_versions`` is 0 and ``versions`` empty unless their policy is chosen.
    ``labels``: version label → version number (treat as read-only; a plain dict so the value
    pickles). Instances are hashable without their labels. ``logging``: its request logging
    (``logging_config``), None when off.
    """

    name: str
    base_path: str
    platform: str = ""
    policy: PolicyKind = "latest"
    num_versions: int = 1
    versions: tuple[int, ...] = ()
    labels: Mapping[str, int] = dataclasses.field(default_factory=dict, hash=False)
    logging: RequestLogging | None = None

    def select_versions(self, available: Iterable[int]) -> tuple[int, ...]:
        """The versions this policy serves out of ``available`` (those found on disk), ascending."""
        found = sorted(set(available))
        if self.policy == "all":
            return tuple(found)
        if self.policy == "specific":
            wanted = set(self.versions)
            return tuple(v for v in found if v in wanted)
        return tuple(found[-self.num_versions :]) if found else ()


def _full_name(message_type: type[message.Message]) -> str:
    name: str = message_type.DESCRIPTOR.full_name
    return name


def _parse_text_file(path: str | Path, message_type: type[_M], *, secret: bool = False) -> _M:
    """Read ``path`` as a text-format ``message_type``; ConfigError on any failure. Errors about
    a ``secret`` file name the position and field, never its content (``secret_errors``)."""
    type_name = _full_name(message_type)
    try:
        text = _read_text(str(path), type_name)
    except UnicodeDecodeError as exc:
        detail = secret_errors.not_utf8(exc, message_type) if secret else str(exc)
        raise ConfigError(f"Error parsing text-format {type_name} in {path}: {detail}") from None
    except OSError as exc:
        raise ConfigError(f"Could not read {type_name} file {path}: {exc.strerror}") from None
    try:
        return text_format.Parse(text, message_type())
    except (text_format.ParseError, message.DecodeError) as exc:
        detail = secret_errors.parse_error(exc, text, message_type) if secret else str(exc)
        raise ConfigError(f"Error parsing text-format {type_name} in {path}: {detail}") from None


def _read_text(path: str, type_name: str) -> str:
    """The file at ``path``, a local path or an object URL (ConfigError when the store fails:
    its bucket, operation and reason)."""
    if not urls.is_url(path):
        return Path(path).read_text(encoding="utf-8")
    try:
        data = read_object(urls.parse_url(path))
    except (urls.UrlError, StoreError, ServingError) as exc:
        raise ConfigError(f"Could not read {type_name} file {path}: {exc}") from None
    return data.decode("utf-8")


def load_model_server_config(path: str | Path) -> model_server_config_pb2.ModelServerConfig:
    """Parse and validate a ``--model_config_file`` (text-format ``ModelServerConfig``)."""
    config = _parse_text_file(path, ModelServerConfig)
    _specs(config, f"{_full_name(ModelServerConfig)} in {path}")
    return config


def model_server_config_from_flags(
    settings: Settings,
) -> model_server_config_pb2.ModelServerConfig:
    """The ``ModelServerConfig`` a command line asks for.

    With ``--model_config_file``: that file (:func:`load_model_server_config`). Otherwise one
    model, ``--model_name`` at ``--model_base_path``, platform left empty (detected from the files;
    TF Serving sets ``"tensorflow"``), default version policy (latest 1).
    """
    if settings.model_config_file:
        return load_model_server_config(settings.model_config_file)
    config = ModelServerConfig()
    model = config.model_config_list.config.add()
    model.name = settings.model_name
    model.base_path = settings.model_base_path
    _specs(config, "model from --model_name / --model_base_path")
    return config


def load_batching_parameters(
    path: str | Path,
) -> session_bundle_config_pb2.BatchingParameters:
    """Parse a text-format ``BatchingParameters`` file (values are checked by the batcher)."""
    return _parse_text_file(path, BatchingParameters)


def load_monitoring_config(path: str | Path) -> monitoring_config_pb2.MonitoringConfig:
    """Parse a ``--monitoring_config_file`` (text-format ``MonitoringConfig``)."""
    return _parse_text_file(path, MonitoringConfig)


def load_ssl_config(path: str | Path) -> ssl_config_pb2.SSLConfig:
    """Parse a ``--ssl_config_file`` (text-format ``SSLConfig``; errors never quote it)."""
    return _parse_text_file(path, SSLConfig, secret=True)


def model_specs(
    config: model_server_config_pb2.ModelServerConfig, paths: ManagementPaths | None = None
) -> list[ModelSpecConfig]:
    """Validate a ``ModelServerConfig`` and return its models in file order. ``paths``: the
    config comes from a management call, whose base paths and log prefixes must be allowed
    (:mod:`gateway.config.management_paths`); None: it is the operator's."""
    return _specs(config, _full_name(ModelServerConfig), paths)


def _specs(
    config: ModelServerConfig, source: str, paths: ManagementPaths | None = None
) -> list[ModelSpecConfig]:
    """Convert ``config``, raising ``ConfigError("Invalid <source>: <problem>")`` on any rule."""

    def invalid(problem: str) -> ConfigError:
        return ConfigError(f"Invalid {source}: {problem}")

    which = config.WhichOneof("config")
    if which is None:
        return []
    if which != "model_config_list":
        raise invalid(f"{which} is not supported by tensorgate; list models in model_config_list")
    specs: list[ModelSpecConfig] = []
    seen: set[str] = set()
    for index, model in enumerate(config.model_config_list.config):
        name = model.name
        if not name:
            raise invalid(f"model #{index + 1} in model_config_list has an empty name")
        if name in seen:
            raise invalid(f"Illegal to list model {name} multiple times in config list")
        seen.add(name)
        specs.append(_spec(model, invalid, paths))
    return specs


def _spec(
    model: model_server_config_pb2.ModelConfig,
    invalid: _Invalid,
    paths: ManagementPaths | None = None,
) -> ModelSpecConfig:
    name: str = model.name
    base_path: str = model.base_path
    if not base_path:
        raise invalid(f"model {name} has an empty base_path")
    if urls.is_url(base_path):
        try:
            urls.parse_url(base_path)
        except urls.UrlError as exc:
            raise invalid(f"model {name}: base_path {exc}") from None
    elif not Path(base_path).is_absolute():
        raise invalid(
            f"Expected model {name} to have an absolute path or URI; got base_path()={base_path}"
        )
    if paths is not None and (problem := paths.check_base_path(base_path)) is not None:
        raise invalid(f"model {name}: {problem}")
    logging = None
    if model.HasField("logging_config"):
        allowed = None if paths is None else paths.check_log_prefix
        logging = request_logging(name, model.logging_config, invalid, allowed)
    policy, num_versions, versions = _policy(model, invalid)
    return ModelSpecConfig(
        name=name,
        base_path=base_path,
        platform=_platform(model, invalid),
        policy=policy,
        num_versions=num_versions,
        versions=versions,
        labels=_labels(model, invalid),
        logging=logging,
    )


def _platform(model: model_server_config_pb2.ModelConfig, invalid: _Invalid) -> str:
    platform: str = model.model_platform
    if model.model_type:
        if platform:
            raise invalid(
                f"model {model.name}: Illegal setting both ModelServerConfig::model_type "
                "(deprecated) and ModelServerConfig::model_platform."
            )
        if model.model_type != model_server_config_pb2.TENSORFLOW:
            kind = model_server_config_pb2.ModelType.Name(model.model_type)
            raise invalid(
                f"model {model.name}: ModelServerConfig::model_type choice {kind} not supported"
            )
        return "tensorflow"
    if platform not in PLATFORMS:
        raise invalid(
            f"model {model.name} has model_platform {platform!r}; tensorgate serves "
            '"onnx", "tensorflow" or "" (detect from the files)'
        )
    return platform


def _policy(
    model: model_server_config_pb2.ModelConfig, invalid: _Invalid
) -> tuple[PolicyKind, int, tuple[int, ...]]:
    """``(policy, num_versions, versions)`` of ``model``'s version policy."""
    policy = model.model_version_policy
    kind = policy.WhichOneof("policy_choice")
    if kind is None:
        return "latest", 1, ()
    if kind == "latest":
        return "latest", max(1, policy.latest.num_versions), ()
    if kind == "all":
        return "all", 0, ()
    versions = sorted(set(policy.specific.versions))
    if not versions:
        raise invalid(f"model {model.name}: model_version_policy.specific.versions is empty")
    if versions[0] < 0:
        raise invalid(f"model {model.name}: version {versions[0]} is negative")
    return "specific", 0, tuple(versions)


def _labels(model: model_server_config_pb2.ModelConfig, invalid: _Invalid) -> Mapping[str, int]:
    labels = dict(sorted(model.version_labels.items()))
    for label, version in labels.items():
        if not label:
            raise invalid(f"model {model.name}: version_labels has an empty label")
        if version < 0:
            raise invalid(f"model {model.name}: version label {label} -> {version} is negative")
    return labels
