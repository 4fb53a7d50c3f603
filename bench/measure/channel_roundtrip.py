"""Gateway ⇄ worker round trips per second over one shared-memory channel (``ping`` descriptors).

Usage: ``python -m bench.measure.channel_roundtrip [--seconds 3] [--inflight 1 8] [--repeats 3]``.
Starts one real worker process, then for each in-flight depth keeps that many pings outstanding
(the gateway side blocks in ``poll`` on the completion doorbell, as the event loop would) and
reports the median of the repeats. For scale it also measures the bare doorbells: two eventfds
ping-ponged with a child process that does nothing else. All runs are interleaved (this
machine's vCPUs vary minute to minute; compare numbers from one run only).
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import statistics
import subprocess
import sys
import time

from channel import messages
from channel.shm.channel import Channel
from workers.bootstrap import spawn_worker

log = logging.getLogger("bench.measure.channel_roundtrip")

_ECHO = """
import os, select, sys
ping, pong = int(sys.argv[1]), int(sys.argv[2])
poller = select.poll()
poller.register(ping, select.POLLIN)
while True:
    poller.poll(-1)
    try:
        count = os.eventfd_read(ping)
    except BlockingIOError:
        continue
    os.eventfd_write(pong, count)
"""


class _BareDoorbells:
    """Two eventfds and an echo child: the floor under any channel round trip."""

    def __init__(self) -> None:
        self.ping = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.pong = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.child = subprocess.Popen(
            [sys.executable, "-c", _ECHO, str(self.ping), str(self.pong)],
            pass_fds=(self.ping, self.pong),
        )
        self._poll = select.poll()
        self._poll.register(self.pong, select.POLLIN)

    def send(self) -> None:
        os.eventfd_write(self.ping, 1)

    def receive(self) -> int:
        while True:
            self._poll.poll(10_000)
            try:
                return os.eventfd_read(self.pong)
            except BlockingIOError:
                continue

    def close(self) -> None:
        self.child.kill()
        self.child.wait()
        os.close(self.ping)
        os.close(self.pong)


class _Client:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self._poll = select.poll()
        self._poll.register(channel.complete_fd, select.POLLIN)
        self._next_id = 1

    def send(self) -> None:
        self.channel.submit(messages.encode(messages.ping_request(self._next_id)))
        self._next_id += 1

    def receive(self) -> int:
        """Blocks until at least one reply; returns how many arrived."""
        while True:
            self._poll.poll(10_000)
            got = self.channel.completions()
            if got:
                return len(got)


def _run(client: _Client | _BareDoorbells, inflight: int, seconds: float) -> float:
    for _ in range(inflight):
        client.send()
    done = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        got = client.receive()
        done += got
        for _ in range(got):
            client.send()
    elapsed = time.perf_counter() - started
    outstanding = inflight
    while outstanding:
        outstanding -= client.receive()
    return done / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--inflight", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    bare = _BareDoorbells()
    with Channel.create(index=0, input_bytes=1 << 20, output_bytes=1 << 20) as channel:
        worker = spawn_worker(channel, log_level="WARNING")
        try:
            client = _Client(channel)
            client.receive()  # ready
            subjects: dict[str, _Client | _BareDoorbells] = {
                "channel ping": client,
                "bare eventfds": bare,
            }
            for subject in subjects.values():
                _run(subject, 1, 0.2)  # warm up
            rates: dict[tuple[str, int], list[float]] = {}
            for _ in range(args.repeats):
                for depth in args.inflight:
                    for name, subject in subjects.items():
                        rate = _run(subject, depth, args.seconds)
                        rates.setdefault((name, depth), []).append(rate)
            for (name, depth), samples in rates.items():
                rate = statistics.median(samples)
                log.info(
                    "%-13s %d in flight: %8.0f round trips/s (%5.1f us per round trip)",
                    name,
                    depth,
                    rate,
                    1e6 * depth / rate,
                )
            channel.submit(messages.encode(messages.stop_request(0)))
            worker.wait(10)
        finally:
            bare.close()
            if worker.poll() is None:
                worker.kill()
                worker.wait()


if __name__ == "__main__":
    main()
