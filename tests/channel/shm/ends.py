"""Both ends of a channel in one process (the worker end on duplicated descriptors)."""

from __future__ import annotations

import os
import select

from channel.shm.channel import Channel


def worker_end(gateway: Channel) -> Channel:
    """A second end in this process, on duplicates of the descriptors a child inherits."""
    memfd, submit_fd, complete_fd, release_fd = (os.dup(fd) for fd in gateway.fds)
    return Channel(
        index=gateway.index,
        memfd=memfd,
        submit_fd=submit_fd,
        complete_fd=complete_fd,
        release_fd=release_fd,
    )


def readable(fd: int) -> bool:
    """``fd`` has something to read now (a doorbell rang)."""
    return bool(select.select([fd], [], [], 0)[0])
