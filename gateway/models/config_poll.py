"""``--model_config_file_poll_wait_seconds``: re-read the model config file and apply it.

As TF Serving's ``Server::PollFilesystemAndReloadConfig``: every period the file is parsed again
and, when it lists something else than the config in force, applied like a
``HandleReloadConfigRequest`` (:meth:`ModelManager.apply`). A file that cannot be read or parsed,
or a config the rules refuse, is logged and ignored: the running config stays, and the next
period tries again. An empty file ("Taking no action for empty config") changes nothing.
"""

from __future__ import annotations

import asyncio
import logging

from gateway.config.model_config import ConfigError, load_model_server_config, model_specs
from gateway.config.settings import Settings
from gateway.errors import ServingError
from gateway.models.manager import ModelManager
from gateway.parallel.supervised import Sleep, Tasks, every

log = logging.getLogger(__name__)


def start_polls(settings: Settings, models: ModelManager, tasks: Tasks) -> None:
    """The polls the flags ask for, as supervised ``tasks``: the model base paths every
    ``--file_system_poll_wait_seconds`` and the config file every
    ``--model_config_file_poll_wait_seconds`` (0: none)."""
    if settings.file_system_poll_wait_seconds > 0:
        every_s = settings.file_system_poll_wait_seconds
        poll = every(every_s, models.scan, what="file system poll", logger=log)
        tasks.spawn(poll, "file system poll")
    if settings.model_config_file and settings.model_config_file_poll_wait_seconds > 0:
        every_s = settings.model_config_file_poll_wait_seconds
        poll = poll_config_file(settings.model_config_file, every_s, models)
        tasks.spawn(poll, "config file poll")


async def poll_config_file(
    path: str, every_s: float, models: ModelManager, sleep: Sleep = asyncio.sleep
) -> None:
    """Re-read ``path`` every ``every_s`` seconds (> 0) and apply it; runs until cancelled (a
    round that fails unexpectedly is logged and the next one runs: :func:`every`)."""
    await every(
        every_s,
        lambda: reload_config_file(path, models),
        what=f"PollFilesystemAndReloadConfig of {path}",
        logger=log,
        sleep=sleep,
    )


async def reload_config_file(path: str, models: ModelManager) -> bool:
    """Read ``path`` once and apply it if it changed; True when a new config was applied."""
    try:
        config = await asyncio.to_thread(load_model_server_config, path)
        specs = model_specs(config)
    except ConfigError as exc:
        log.error("Failed to read ModelServerConfig file: %s", exc)
        return False
    if config.WhichOneof("config") is None:
        log.info("Taking no action for empty config in %s", path)
        return False
    if specs == models.specs():
        return False
    log.info("%s changed: applying its %d model(s)", path, len(specs))
    try:
        await models.apply(specs)
    except ServingError as exc:
        log.error("PollFilesystemAndReloadConfig failed to ReloadConfig: %s", exc.message)
        return False
    return True
