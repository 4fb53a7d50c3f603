"""Starting a worker process: the gateway's :func:`spawn_worker` and the child's :func:`main`.

``python -m workers --index N --memfd FD --submit-fd FD --complete-fd FD --release-fd FD
--parent-pid PID [--handover-fd FD] [--log-level LEVEL] [--log-format text|json]``: the
descriptors are the channel's, inherited (:func:`worker_argv` writes these arguments,
:func:`main` reads them). With ``--handover-fd`` (a Unix socket: several front ends) the worker
also serves the channels handed over on it (:mod:`workers.channel_set`).

The child, in order: pins native thread pools to one thread (before numpy or ONNX Runtime load),
sets up logging in tensorgate's one format (:mod:`channel.logs`; TensorFlow's start-up noise kept
out), asks the kernel to SIGKILL it when its parent dies (``PR_SET_PDEATHSIG``; if the parent is
already gone it exits 1), installs signal handlers that only set a flag (SIGTERM: finish the
current request, then exit 0; SIGINT is ignored — the gateway decides when workers stop),
attaches to its channel and runs :func:`workers.worker.serve_channels` over it (and the channels
handed over later, if any).

Nothing here imports grpc, protobuf or the gateway.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence

from channel import logs
from channel.shm.channel import Channel

log = logging.getLogger(__name__)

THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
}
"""Environment that keeps libraries from starting one thread per core in every worker; ONNX
Runtime's own pools are sized by each ``load`` request."""

_PR_SET_PDEATHSIG = 1


def worker_argv(
    channel: Channel,
    *,
    parent_pid: int,
    log_level: str = "INFO",
    log_format: str = "text",
    handover_fd: int | None = None,
) -> list[str]:
    """Arguments for ``python -m workers`` attached to ``channel`` (whose :attr:`Channel.fds`
    the child must inherit, and ``handover_fd`` when given), naming ``parent_pid`` as the process
    it dies with."""
    memfd, submit_fd, complete_fd, release_fd = channel.fds
    handover = [] if handover_fd is None else ["--handover-fd", str(handover_fd)]
    return [
        *("--index", str(channel.index), "--memfd", str(memfd)),
        *("--submit-fd", str(submit_fd), "--complete-fd", str(complete_fd)),
        *("--release-fd", str(release_fd), "--parent-pid", str(parent_pid)),
        *("--log-level", log_level, "--log-format", log_format),
        *handover,
    ]


def spawn_worker(
    channel: Channel,
    *,
    log_level: str = "INFO",
    log_format: str = "text",
    env: Mapping[str, str] | None = None,
    handover_fd: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``python -m workers`` attached to ``channel``; it posts a ``ready`` completion once
    it can take requests. Call from a thread that lives as long as the worker (the event loop's):
    the kernel's parent-death signal follows the thread that spawned the child, not the process.
    ``handover_fd``: the child's end of a Unix socket on which channels are handed over later.
    """
    child_env = dict(os.environ if env is None else env)
    child_env.update(THREAD_ENV)
    argv = worker_argv(
        channel,
        parent_pid=os.getpid(),
        log_level=log_level,
        log_format=log_format,
        handover_fd=handover_fd,
    )
    return subprocess.Popen(
        [sys.executable, "-m", "workers", *argv],
        pass_fds=channel.fds if handover_fd is None else (*channel.fds, handover_fd),
        stdin=subprocess.DEVNULL,
        env=child_env,
    )


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m workers", add_help=False)
    for flag in ("--index", "--memfd", "--submit-fd", "--complete-fd", "--release-fd"):
        parser.add_argument(flag, type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--handover-fd", type=int, default=None)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--log-format", default="text", choices=logs.FORMATS)
    return parser.parse_args(list(argv))


def die_with_parent(parent_pid: int) -> bool:
    """Ask the kernel for SIGKILL when the parent (``parent_pid``, the thread that spawned this
    process) dies; False if the parent is already gone. Front ends use it too."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_PDEATHSIG) failed: %s", os.strerror(ctypes.get_errno()))
    # The parent may have died before prctl ran: then we were re-parented already.
    return os.getppid() == parent_pid


class _StopFlag:
    """Set by SIGTERM; the serving loop asks :attr:`stopping` between requests."""

    def __init__(self) -> None:
        self._signals: list[int] = []
        self.stopping: Callable[[], bool] = functools.partial(bool, self._signals)
        """True once a signal came (a C callable: asked once per request, it runs no Python)."""

    def handle(self, signum: int, frame: object) -> None:
        self._signals.append(signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a worker from ``python -m workers`` arguments; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    os.environ.update(THREAD_ENV)
    args = _parse(argv)
    logs.configure(f"worker-{args.index}", args.log_format, args.log_level)
    logs.quiet_tensorflow()
    if not die_with_parent(args.parent_pid):
        log.error("parent %d exited before the worker started", args.parent_pid)
        return 1
    stop = _StopFlag()
    signal.signal(signal.SIGTERM, stop.handle)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    channel = Channel(
        index=args.index,
        memfd=args.memfd,
        submit_fd=args.submit_fd,
        complete_fd=args.complete_fd,
        release_fd=args.release_fd,
    )
    handover = None if args.handover_fd is None else socket.socket(fileno=args.handover_fd)
    try:
        # numpy and ONNX Runtime load after THREAD_ENV is set
        from workers.channel_set import ChannelSet
        from workers.worker import serve_channels

        return serve_channels(ChannelSet(channel, handover, wake_r), stop.stopping)
    finally:
        if handover is not None:
            handover.close()
        channel.close()
        signal.set_wakeup_fd(-1)
        os.close(wake_r)
        os.close(wake_w)
