"""The need-wakeup doorbells of a channel (as io_uring's), shared by its rings and its output area.

A doorbell is an eventfd and a word in the segment's header that its consumer sets while it
sleeps. The consumer sets the word, :func:`fence`\\ s, re-checks for work and only then sleeps on
the eventfd; the producer makes work available, :func:`fence`\\ s, and rings only when the word is
set, clearing it as it rings (:func:`ring_if_sleeping`). Either the producer sees the word or the
consumer sees the work, so no wake-up is lost, and a consumer that is awake or already rung costs
its producer no system call.
"""

from __future__ import annotations

import os
from typing import Final

from channel.shm import fences

fence: Final = fences.fence
"""A full memory barrier (:mod:`channel.shm.fences`), which keeps this thread's earlier stores
from passing its later loads. Both sides of the waiting-flag handshake need it, or each could miss
the other's store."""


def ring_if_sleeping(words: memoryview, word: int, fd: int) -> None:
    """The producer's half of the handshake, after making work available: ring the eventfd
    ``fd`` once if the consumer set ``words[word]``, clearing it."""
    fence()
    if words[word]:
        words[word] = 0
        os.eventfd_write(fd, 1)
