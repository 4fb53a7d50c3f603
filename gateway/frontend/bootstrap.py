"""Starting a front-end process: the child's side of :mod:`gateway.supervisor.frontends`.

``python -m gateway.frontend --slot N --serial S --control-fd FD --load-table-fd FD --frontends K
--workers W --parent-pid PID -- <tensorgate's flags>``: the descriptors are inherited (the Unix
socket to the supervisor, the shared load table's memfd); the flags are the supervisor's own
command line, parsed by the same parser, so every setting is the same in every process.

The child, in order: asks the kernel to SIGKILL it when the supervisor dies (the workers'
mechanism, :func:`workers.bootstrap.die_with_parent`; if the supervisor is already gone it exits
1), sets up logging in tensorgate's one format (process ``frontend-N``), maps the load table,
and runs :class:`~gateway.frontend.frontend_process.FrontEnd` on uvloop. Loop-bound objects are
made inside the loop.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import socket
import sys
from collections.abc import Sequence

import uvloop

from channel import logs
from gateway.config.flags import FlagError, parse_flags
from gateway.config.settings import Settings
from gateway.errors import ServingError
from gateway.runs.shared_load import LoadTable
from workers.bootstrap import die_with_parent

log = logging.getLogger(__name__)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gateway.frontend", add_help=False)
    for flag in ("--slot", "--serial", "--control-fd", "--load-table-fd", "--frontends"):
        parser.add_argument(flag, type=int, required=True)
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("flags", nargs=argparse.REMAINDER)
    return parser.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    """Run a front end from ``python -m gateway.frontend`` arguments; its exit status."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    flags = args.flags[1:] if args.flags[:1] == ["--"] else args.flags
    try:
        settings = parse_flags(flags)
    except FlagError as exc:
        sys.stderr.write(f"tensorgate front end: {exc}\n")
        return 2
    settings = dataclasses.replace(settings, workers=args.workers, ready_fd=-1)
    logs.configure(f"frontend-{args.slot}", settings.log_format)
    if not die_with_parent(args.parent_pid):
        log.error("supervisor %d exited before front end %d started", args.parent_pid, args.slot)
        return 1
    table = LoadTable(args.load_table_fd, args.frontends, args.workers)
    os.close(args.load_table_fd)  # the mapping stays
    control = socket.socket(fileno=args.control_fd)
    try:
        uvloop.run(_serve(settings, args, control, table))
    except ServingError as exc:
        log.error("front end %d failed: %s", args.slot, exc.message)
        return 1
    finally:
        table.close()
    return 0


async def _serve(
    settings: Settings, args: argparse.Namespace, control: socket.socket, table: LoadTable
) -> None:
    # grpc and the protocols load after the checks
    from gateway.frontend.frontend_process import FrontEnd

    front = FrontEnd(
        settings,
        slot=args.slot,
        serial=args.serial,
        control=control,
        table=table,
    )
    await front.serve()
