"""Which batching options each queue gets: the global ones, or a version's own file.

Unbatched mode is a policy too: every request is its own batch, with two per worker in flight so a
worker never idles between requests.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from gateway.config.batching_options import BatchingOptions, load_options, per_model_options
from gateway.config.model_config import ConfigError, ModelSpecConfig
from gateway.config.settings import Settings
from gateway.errors import FailedPrecondition


class VersionFolder(Protocol):
    """What the policy reads of a servable (a :class:`~gateway.serving.registry.Servable`): the
    model and version, and the version's directory, where its own batching file may be."""

    @property
    def model(self) -> str: ...

    @property
    def version(self) -> int: ...

    @property
    def directory(self) -> str: ...


@dataclass(frozen=True)
class BatchingPolicy:
    """Which batching options each queue gets.

    ``options``: for every queue (``BatchingOptions.unbatched()`` when batching is off).
    ``per_model``: read ``batching_params.pbtxt`` from a version's folder when present.
    ``base_paths``: model name → base path (to find that folder). ``workers``: resolves
    ``num_batch_threads`` 0.
    """

    options: BatchingOptions
    workers: int
    per_model: bool = False
    base_paths: Mapping[str, str] | None = None
    max_queue_delay_s: float = 0.0
    """``--max_queue_delay_ms`` in seconds, given to every queue (per-model files included)."""

    @classmethod
    def from_settings(
        cls, settings: Settings, specs: Sequence[ModelSpecConfig], workers: int
    ) -> BatchingPolicy:
        """The policy the flags ask for (ConfigError for a bad parameters file)."""
        delay_s = settings.max_queue_delay_ms / 1000
        if not settings.enable_batching:
            return cls(BatchingOptions.unbatched(), workers, max_queue_delay_s=delay_s)
        options = BatchingOptions()
        if settings.batching_parameters_file:
            options = load_options(settings.batching_parameters_file)
        return cls(
            options,
            workers,
            per_model=settings.enable_per_model_batching_parameters,
            base_paths={spec.name: spec.base_path for spec in specs},
            max_queue_delay_s=delay_s,
        )

    def check_version(self, model: str, version: int, directory: str) -> None:
        """Fail a version's load early (FailedPrecondition) when its batching file is invalid."""
        if self.per_model:
            try:
                per_model_options(directory, self.options)
            except ConfigError as exc:
                raise FailedPrecondition(str(exc)) from None

    def for_servable(self, servable: VersionFolder) -> BatchingOptions:
        options = self.options
        if self.per_model:
            directory = servable.directory
            if not directory and self.base_paths and servable.model in self.base_paths:
                directory = os.path.join(self.base_paths[servable.model], str(servable.version))
            if directory:
                options = per_model_options(directory, options)
        delay_s = self.max_queue_delay_s
        if options.solo and not options.num_batch_threads:
            # Unbatched: let each worker hold a second request in its ring (no idle gap).
            threads = 2 * max(1, self.workers)
            return replace(options, num_batch_threads=threads, max_queue_delay_s=delay_s)
        threads = options.threads(self.workers)
        return replace(options, num_batch_threads=threads, max_queue_delay_s=delay_s)

    def warmup_batch_sizes(self, servable: VersionFolder) -> tuple[int, ...]:
        """The batch sizes a servable's warmup runs once each: its ``allowed_batch_sizes`` when
        batching is on (none when off or when its batching file is invalid)."""
        try:
            options = self.for_servable(servable)
        except ConfigError:
            return ()
        return () if options.solo else options.allowed_batch_sizes
