"""``tensorgate``: the console entry point (tensorflow_model_server's flags).

Exit codes: 0 after a clean shutdown, 2 for a bad command line, 1 for a bad config file, a
failure to start or an unexpected error (logged as one line with its traceback; a start that
fails writes nothing to ``--ready_fd`` and closes it).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import uvloop

from channel import logs
from gateway.config.flags import FlagError, parse_flags
from gateway.config.model_config import (
    ConfigError,
    load_model_server_config,
    model_server_config_from_flags,
    model_specs,
)
from gateway.config.sizing import resolve_frontends
from gateway.errors import ServingError
from gateway.one_process import Gateway

log = logging.getLogger("tensorgate")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        settings = parse_flags(args)
    except FlagError as exc:
        sys.stderr.write(f"tensorgate: {exc}\n")
        return 2
    logs.configure("gateway", settings.log_format)
    try:
        if settings.model_config_file:
            config = load_model_server_config(settings.model_config_file)
        else:
            config = model_server_config_from_flags(settings)
        specs = model_specs(config)
    except ConfigError as exc:
        sys.stderr.write(f"tensorgate: {exc}\n")
        return 1
    frontends = resolve_frontends(settings)
    try:
        if frontends > 1:
            from gateway.supervisor.supervisor_process import Supervisor

            server: Gateway | Supervisor = Supervisor(
                settings, specs, frontends=frontends, flags=args
            )
        else:
            server = Gateway(settings, specs)
    except ConfigError as exc:
        sys.stderr.write(f"tensorgate: {exc}\n")
        return 1
    try:
        uvloop.run(server.serve())
    except ServingError as exc:
        log.error("failed to start: %s", exc.message)
        return 1
    except Exception as exc:  # a bug: one clear line (its traceback below it), never a bare one
        what = "failed" if server.started else "failed to start"
        log.error("%s: %s: %s", what, type(exc).__name__, exc, exc_info=exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
