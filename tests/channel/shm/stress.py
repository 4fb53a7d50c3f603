"""The channel's stress test: its two ends in two processes, every byte checked.

Run by tests/channel/shm/test_stress.py here, and inside the arm64 image under emulation by
``make test-image`` (tests/deploy/test_image.py, with tests/ mounted), as::

    python -m tests.channel.shm.stress [--runs N]

It needs only the ``channel`` package, numpy and the standard library. The gateway end (this
process) keeps up to :data:`IN_FLIGHT` runs in flight, each naming an input block of its own
filled with the run's number (uint64 words) in a message whose padding bytes are derived from it
too; the worker end (a child, ``--worker``, on the descriptors it inherits) checks every byte of
both, writes an output block filled with the number's complement and replies. The gateway checks
every byte of the output and the reply, holds each output range, and releases a batch's ranges in
shuffled order. Sizes vary so that both rings wrap many times, and the output area is small, so
the worker keeps waiting for space on the release doorbell while both ends sleep on each other's
doorbells in turn. A byte read before its writer published it, a slot or block written again
while it was read, or a lost wake-up (no progress in :data:`WAIT_S`) fails it: the exit status is
non-zero and the reason is printed.

On the last line it prints the machine and how the fences run there (``platform.machine()``;
the arm64 fences are ``dmb`` instructions called through ctypes).
"""

from __future__ import annotations

import argparse
import platform
import random
import select
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import numpy as np

from channel.shm import fences
from channel.shm.channel import Channel

ROOT: Final = Path(__file__).resolve().parents[3]
HEAD: Final = struct.Struct("<QQQQ")
"""A request: run, input offset, input bytes, output bytes. A reply: run, output offset, output
bytes, the output area's end after it."""
STOP: Final = 2**64 - 1
IN_FLIGHT: Final = 6
RING_SLOTS: Final = 8
SLOT_BYTES: Final = 512
INPUT_BYTES: Final = 1 << 16
OUTPUT_BYTES: Final = 1 << 15
WAIT_S: Final = 60.0


class Broken(Exception):
    """What the stress test found wrong."""


def padding(run: int, reply: bool) -> bytes:
    """The bytes after a message's head: their count and values derived from ``run``."""
    count = (run * 37 + (11 if reply else 0)) % (SLOT_BYTES - 4 - HEAD.size + 1)
    return bytes((run + i + reply) % 251 for i in range(count))


def sizes(run: int) -> tuple[int, int]:
    """Input and output bytes of ``run``: multiples of 8, up to 8 KiB and a fifth of the output
    area."""
    rng = random.Random(run)
    return 8 * rng.randint(1, 1024), 8 * rng.randint(1, OUTPUT_BYTES // 40)


def check_words(view: memoryview, value: int, what: str) -> None:
    words = np.frombuffer(view, dtype="<u8")
    wrong = np.flatnonzero(words != np.uint64(value))
    if wrong.size:
        first = int(wrong[0])
        raise Broken(f"{what}: word {first} of {words.size} is {int(words[first]):#x}")


def split(message: bytes, run_reply: bool) -> tuple[int, int, int, int]:
    fields = HEAD.unpack_from(message)
    if fields[0] != STOP and message[HEAD.size :] != padding(fields[0], run_reply):
        raise Broken(f"the {'reply' if run_reply else 'request'} of run {fields[0]} is corrupt")
    return fields


# -- the worker end ------------------------------------------------------------------------------


def serve(channel: Channel) -> None:
    """Answer every request until the stop message."""
    while True:
        for message in channel.wait_submissions(WAIT_S):
            run, in_offset, in_bytes, out_bytes = split(message, False)
            if run == STOP:
                return
            check_words(channel.input_view(in_offset, in_bytes), run, f"input of run {run}")
            out_offset = channel.alloc_output(out_bytes, timeout=WAIT_S)
            np.frombuffer(channel.output_view(out_offset, out_bytes), dtype="<u8")[:] = ~run & STOP
            reply = HEAD.pack(run, out_offset, out_bytes, channel.output_allocated)
            channel.post_completion(reply + padding(run, True))


# -- the gateway end -----------------------------------------------------------------------------


def drive(channel: Channel, worker: subprocess.Popen[bytes], runs: int) -> None:
    """``runs`` runs through the worker, every byte checked."""
    shuffle = random.Random(runs)
    inputs: dict[int, int] = {}
    sent = done = 0
    while done < runs:
        while sent < runs and len(inputs) < IN_FLIGHT:
            in_bytes, out_bytes = sizes(sent)
            offset = channel.alloc_input(in_bytes)
            if offset is None:
                break
            np.frombuffer(channel.input_view(offset, in_bytes), dtype="<u8")[:] = sent
            channel.submit(HEAD.pack(sent, offset, in_bytes, out_bytes) + padding(sent, False))
            inputs[sent] = offset
            sent += 1
        if not select.select([channel.complete_fd], [], [], WAIT_S)[0]:
            state = "exited" if worker.poll() is not None else "is still running"
            raise Broken(f"no reply in {WAIT_S:.0f} s after {done} runs (the worker {state})")
        held = []
        for reply in channel.completions():
            run, out_offset, out_bytes, out_end = split(reply, True)
            if run not in inputs or sizes(run)[1] != out_bytes:
                raise Broken(f"a reply to run {run}, which is not in flight")
            view = channel.output_reader(out_offset, out_bytes)
            check_words(view, ~run & STOP, f"output of run {run}")
            view.release()
            channel.free_input(inputs.pop(run))
            if channel.hold_outputs(out_end):
                held.append(out_end)
            done += 1
        shuffle.shuffle(held)
        for out_end in held:
            channel.release_outputs(out_end, held=True)


def run(runs: int) -> str:
    """The stress test; a line saying what ran where. Broken when something is wrong."""
    channel = Channel.create(
        index=0,
        input_bytes=INPUT_BYTES,
        output_bytes=OUTPUT_BYTES,
        ring_slots=RING_SLOTS,
        slot_bytes=SLOT_BYTES,
    )
    command = [sys.executable, "-m", "tests.channel.shm.stress", "--worker"]
    worker = subprocess.Popen(
        [*command, *map(str, channel.fds)], pass_fds=channel.fds, cwd=ROOT, stderr=subprocess.PIPE
    )
    started = time.monotonic()
    try:
        drive(channel, worker, runs)
        channel.submit(HEAD.pack(STOP, 0, 0, 0))
        _, err = worker.communicate(timeout=WAIT_S)
        if worker.returncode != 0:
            raise Broken(f"the worker exited {worker.returncode}: {err.decode()[-2000:]}")
    except BaseException:
        worker.kill()
        _, err = worker.communicate()
        if err:
            print(err.decode()[-4000:], file=sys.stderr)
        raise
    finally:
        channel.close()
    return (
        f"{runs} runs in {time.monotonic() - started:.1f} s on {platform.machine()}, "
        f"fences: {fences.IMPLEMENTATION}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--worker", nargs=4, type=int, metavar="FD", help="(the child's end)")
    args = parser.parse_args(argv)
    if args.worker:
        memfd, submit, complete, release = args.worker
        with Channel(
            index=0, memfd=memfd, submit_fd=submit, complete_fd=complete, release_fd=release
        ) as channel:
            serve(channel)
        return 0
    try:
        print(run(args.runs))
    except Broken as exc:
        print(f"channel stress: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
