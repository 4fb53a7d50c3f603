"""The one typed settings object of the gateway, fed by tensorflow_model_server's flags.

Every field is named after its command-line flag (``--port`` → :attr:`Settings.port`) and carries
its unit, default and reason in ``dataclasses.fields(Settings)[i].metadata["doc"]`` (also the
``--help`` text). TF Serving's defaults are kept unless the field says otherwise. Validation
(:mod:`gateway.config.validation`) runs on construction; the derived values (parsed lists, bytes
from MiB) are properties here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.config.model_runtimes import RuntimeChoice, parse_model_runtimes
from gateway.config.model_workers import parse_model_workers
from gateway.config.settings_field import MIB
from gateway.config.settings_listen import ListenSettings
from gateway.config.settings_models import ModelSettings
from gateway.config.settings_runtime import RuntimeSettings
from gateway.config.validation import parse_grpc_channel_arguments, validate

__all__ = ["MIB", "Settings"]


@dataclass(frozen=True)
class Settings(RuntimeSettings, ModelSettings, ListenSettings):
    """Everything the gateway is configured with; immutable, validated on construction.

    Build it with :func:`gateway.config.flags.parse_flags` from a command line, or directly in tests
    (``Settings(model_base_path="/models/m")``). Either ``model_base_path`` or
    ``model_config_file`` is required, as in TF Serving. The fields come in three groups, each in
    its module: :class:`~gateway.config.settings_listen.ListenSettings` (the front door),
    :class:`~gateway.config.settings_models.ModelSettings` (what is served, and batching) and
    :class:`~gateway.config.settings_runtime.RuntimeSettings` (workers, lifecycle, limits, logs);
    :func:`dataclasses.fields` lists them all, in that order.
    """

    def __post_init__(self) -> None:
        validate(self)

    @property
    def grpc_channel_options(self) -> tuple[tuple[str, int | str], ...]:
        """``grpc_channel_arguments`` as gRPC server options, in order."""
        return parse_grpc_channel_arguments(self.grpc_channel_arguments)

    @property
    def model_worker_counts(self) -> Mapping[str, int]:
        """``model_workers`` parsed: model name (or ``*``) → worker count."""
        return parse_model_workers(self.model_workers)

    @property
    def model_runtime_choices(self) -> Mapping[str, RuntimeChoice]:
        """``model_runtimes`` parsed: model name (or ``*``) → runtime and precision."""
        return parse_model_runtimes(self.model_runtimes)

    @property
    def saved_model_tag_set(self) -> frozenset[str]:
        """``saved_model_tags`` split on commas."""
        return frozenset(tag.strip() for tag in self.saved_model_tags.split(","))

    @property
    def worker_arena_bytes(self) -> int:
        """``worker_arena_mb`` in bytes (the size of each of a worker's input and output areas)."""
        return self.worker_arena_mb * MIB
