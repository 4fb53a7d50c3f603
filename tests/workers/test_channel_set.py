"""One wait over several channels and the handover socket, in one process: the gateway's ends
made by ``Channel.create``, the worker's ends mapped from copies of their descriptors."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator

import pytest

from channel import handover
from channel.shm.channel import Channel
from workers.channel_set import Arrivals, ChannelSet

WAIT_S = 30.0


def _pair() -> tuple[Channel, Channel]:
    """(the gateway's end, the worker's end) of one fresh channel."""
    gateway = Channel.create(index=0, input_bytes=1 << 16, output_bytes=1 << 16, ring_slots=8)
    memfd, submit, complete, release = (os.dup(fd) for fd in gateway.fds)
    worker = Channel(
        index=0, memfd=memfd, submit_fd=submit, complete_fd=complete, release_fd=release
    )
    return gateway, worker


@pytest.fixture
def setup() -> Iterator[tuple[Channel, ChannelSet, socket.socket]]:
    gateway, worker = _pair()
    ours, theirs = socket.socketpair()
    channels = ChannelSet(worker, theirs, None)
    try:
        yield gateway, channels, ours
    finally:
        channels.close()
        worker.close()
        gateway.close()
        ours.close()
        theirs.close()


def _wait_in_thread(channels: ChannelSet) -> tuple[threading.Thread, list[Arrivals]]:
    found: list[Arrivals] = []
    thread = threading.Thread(target=lambda: found.append(channels.wait()), daemon=True)
    thread.start()
    return thread, found


def test_pending_requests_return_at_once_per_channel(
    setup: tuple[Channel, ChannelSet, socket.socket],
) -> None:
    gateway, channels, _ = setup
    other, other_worker = _pair()
    channels.attach(5, other_worker)
    gateway.submit(b"p1")
    other.submit(b"o1")
    other.submit(b"o2")
    ready = channels.wait()
    assert [(ch is channels.primary, data) for ch, data in ready.requests] == [
        (True, [b"p1"]),
        (False, [b"o1", b"o2"]),
    ]
    other.close()


def test_a_sleeping_wait_wakes_for_any_channel(
    setup: tuple[Channel, ChannelSet, socket.socket],
) -> None:
    gateway, channels, _ = setup
    other, other_worker = _pair()
    channels.attach(5, other_worker)
    thread, found = _wait_in_thread(channels)
    while not other.worker_sleeps:  # the wait announced its sleep on every channel
        thread.join(0.001)
    assert gateway.worker_sleeps
    other.submit(b"o1")
    thread.join(WAIT_S)
    assert not thread.is_alive()
    ((channel, data),) = found[0].requests
    assert channel is other_worker and data == [b"o1"]
    assert not gateway.worker_sleeps and not other.worker_sleeps
    other.close()


def test_a_channel_handed_over_during_a_wait_is_served(
    setup: tuple[Channel, ChannelSet, socket.socket],
) -> None:
    gateway, channels, ours = setup
    thread, found = _wait_in_thread(channels)
    while not gateway.worker_sleeps:
        thread.join(0.001)
    new = Channel.create(index=0, input_bytes=1 << 16, output_bytes=1 << 16, ring_slots=8)
    copies = [os.dup(fd) for fd in new.fds]
    handover.send(ours, {"op": "attach", "owner": 9}, copies)
    handover.close_all(copies)
    thread.join(WAIT_S)
    assert found[0].handed_over and not found[0].requests
    assert len(channels.channels) == 2
    thread, found = _wait_in_thread(channels)
    while not new.worker_sleeps:  # the next wait sleeps on it too
        thread.join(0.001)
    new.submit(b"n1")
    thread.join(WAIT_S)
    ((channel, data),) = found[0].requests
    assert channel is not channels.primary and data == [b"n1"]
    handover.send(ours, {"op": "detach", "owner": 9})
    assert channels.wait().handed_over
    assert channels.channels == [channels.primary]
    new.close()


def _open_refs(inode: int) -> int:
    """Descriptors of this process open on the pipe ``inode``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own descriptor
            count += os.readlink(f"/proc/self/fd/{fd}") == f"pipe:[{inode}]"
    return count


def test_unknown_handover_messages_close_their_descriptors(
    setup: tuple[Channel, ChannelSet, socket.socket],
) -> None:
    _, channels, ours = setup
    r, w = os.pipe()
    inode = os.fstat(r).st_ino
    handover.send(ours, {"op": "bogus"}, [r])
    os.close(r)
    new = Channel.create(index=0, input_bytes=1 << 16, output_bytes=1 << 16, ring_slots=8)
    copies = [os.dup(fd) for fd in new.fds]
    handover.send(ours, {"op": "attach", "owner": 1}, copies)
    handover.close_all(copies)
    while len(channels.channels) == 1:  # each wait returns once it applied what came
        assert channels.wait().handed_over
    assert _open_refs(inode) == 1  # our write end only
    os.close(w)
    new.close()
