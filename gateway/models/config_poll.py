"""``--model_config_file_poll_wait_seconds``: re-read the model config file and apply it.

As TF Serving's ``Server::PollFilesystemAndReloadConfig``: every period the file (a local path or
an object URL, read in a thread that never holds up the exit) is parsed again
and, when it lists something else than *the file as last read*, applied like a
``HandleReloadConfigRequest`` (:meth:`ModelManager.apply`). The comparison is with the file,
not with the config in force: a change made another way (a V2 repository unload or load, a
reload RPC) stays until the file itself changes. A file that cannot be read or parsed, or a
config the rules refuse, is logged and ignored: the running config stays, and the next period
tries again. An empty file ("Taking no action for empty config") changes nothing.

Applying a config calls the manager's ``on_change`` (:meth:`ModelManager.apply`), which is how a
label move or a model added with a missing base path reaches every front end of a supervisor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from gateway.config.model_config import (
    ConfigError,
    ModelSpecConfig,
    load_model_server_config,
    model_specs,
)
from gateway.config.settings import Settings
from gateway.errors import ServingError
from gateway.models.manager import ModelManager
from gateway.storage.blocking import off_loop
from gateway.tasks import Sleep, Tasks, every

log = logging.getLogger(__name__)


def start_polls(settings: Settings, models: ModelManager, tasks: Tasks) -> None:
    """The polls the flags ask for, as supervised ``tasks``: the model base paths every
    ``--file_system_poll_wait_seconds`` and the config file every
    ``--model_config_file_poll_wait_seconds`` (0: none), from the config in force now (the
    file as read at start)."""
    if settings.file_system_poll_wait_seconds > 0:
        every_s = settings.file_system_poll_wait_seconds
        poll = every(every_s, models.scan, what="file system poll", logger=log)
        tasks.spawn(poll, "file system poll")
    if settings.model_config_file and settings.model_config_file_poll_wait_seconds > 0:
        every_s = settings.model_config_file_poll_wait_seconds
        reader = ConfigFilePoll(settings.model_config_file, models)
        tasks.spawn(reader.run(every_s), "config file poll")


class ConfigFilePoll:
    """Re-reads ``path`` and applies it to ``models`` when it changed since the last read
    (at first: the config ``models`` serves now, read from that file at start)."""

    def __init__(self, path: str, models: ModelManager) -> None:
        self.path = path
        self._models = models
        self._last: Sequence[ModelSpecConfig] = models.specs()

    async def run(self, every_s: float, sleep: Sleep = asyncio.sleep) -> None:
        """Re-read every ``every_s`` seconds (> 0); runs until cancelled (a round that fails
        unexpectedly is logged and the next one runs: :func:`every`)."""
        await every(
            every_s,
            self.reload,
            what=f"PollFilesystemAndReloadConfig of {self.path}",
            logger=log,
            sleep=sleep,
        )

    async def reload(self) -> bool:
        """Read the file once and apply it if it changed; True when a new config was applied
        (a refused one is tried again at the next read)."""
        try:
            config = await off_loop(lambda: load_model_server_config(self.path), "config file read")
            specs = model_specs(config)
        except ConfigError as exc:
            log.error("Failed to read ModelServerConfig file: %s", exc)
            return False
        if config.WhichOneof("config") is None:
            log.info("Taking no action for empty config in %s", self.path)
            return False
        if specs == self._last:
            return False
        log.info("%s changed: applying its %d model(s)", self.path, len(specs))
        try:
            await self._models.apply(specs)
        except ServingError as exc:
            log.error("PollFilesystemAndReloadConfig failed to ReloadConfig: %s", exc.message)
            return False
        finally:  # a refused file is read again next time; one in force (its new models may
            if self._models.specs() == specs:  # have failed to load) is the file last read
                self._last = specs
        return True
