"""The input-area allocator and the output-area circular buffer, as pure data structures."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channel.shm.arena import ALIGNMENT, EARLY_WRAP_ROOM, Allocator, OutputRing, align_up


def _alloc(arena: Allocator, nbytes: int) -> int:
    offset = arena.alloc(nbytes)
    assert offset is not None
    return offset


def test_blocks_are_aligned_and_at_least_one_line() -> None:
    arena = Allocator(1024)
    offsets = [arena.alloc(n) for n in (1, 0, 65, 64)]
    assert offsets == [0, 64, 128, 256]
    assert arena.used == 320


def test_first_fit_takes_the_lowest_hole_that_fits() -> None:
    arena = Allocator(64 * 10)
    a, b, c, d = (_alloc(arena, 128) for _ in range(4))
    assert (a, b, c, d) == (0, 128, 256, 384)
    arena.free(a)  # hole of 128 at 0
    arena.free(c)  # hole of 128 at 256
    assert arena.alloc(192) is None  # no hole (nor the 128-byte tail) is big enough
    assert arena.alloc(64) == 0
    assert arena.alloc(128) == 256  # the 64 bytes left at 64 are too small
    assert arena.alloc(64) == 64


def test_free_coalesces_with_both_neighbours() -> None:
    arena = Allocator(64 * 6)
    a, b, c = (_alloc(arena, 128) for _ in range(3))
    assert (a, b, c) == (0, 128, 256)
    arena.free(a)
    arena.free(c)
    assert arena.free_blocks() == [(0, 128), (256, 128)]
    arena.free(b)
    assert arena.free_blocks() == [(0, 384)]
    assert arena.used == 0
    assert arena.alloc(384) == 0


def test_exhaustion_returns_none_until_something_is_freed() -> None:
    arena = Allocator(1000)  # rounds down to 960
    assert arena.capacity == 960
    assert arena.alloc(961) is None
    block = _alloc(arena, 960)
    assert block == 0
    assert arena.alloc(1) is None
    arena.free(block)
    assert arena.alloc(1) == 0


def test_misuse_is_rejected() -> None:
    with pytest.raises(ValueError, match="must be >= 64"):
        Allocator(10)
    arena = Allocator(256)
    with pytest.raises(ValueError, match="nbytes must be >= 0"):
        arena.alloc(-1)
    block = _alloc(arena, 8)
    arena.free(block)
    with pytest.raises(ValueError, match="not an allocated block"):
        arena.free(block)
    with pytest.raises(ValueError, match="not an allocated block"):
        arena.free(64)


@settings(max_examples=2 * settings().max_examples)  # 200 under the ci profile
@given(
    size=st.integers(64, 8192),
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 3000)), max_size=60),
)
def test_blocks_never_overlap_and_free_space_adds_up(
    size: int, ops: list[tuple[bool, int]]
) -> None:
    arena = Allocator(size)
    live: dict[int, int] = {}
    for is_alloc, n in ops:
        if is_alloc or not live:
            offset = arena.alloc(n)
            if offset is not None:
                assert offset % ALIGNMENT == 0
                live[offset] = max(align_up(n), ALIGNMENT)
        else:
            victim = sorted(live)[n % len(live)]
            arena.free(victim)
            del live[victim]
        spans = sorted(live.items())
        for (start, length), (next_start, _) in itertools.pairwise(spans):
            assert start + length <= next_start
        assert all(start + length <= arena.capacity for start, length in spans)
        assert arena.used == sum(live.values())
        free = arena.free_blocks()
        assert sum(length for _, length in free) == arena.capacity - arena.used
        for (start, length), (next_start, _) in itertools.pairwise(free):
            assert start + length < next_start  # coalesced: never adjacent


def test_output_ring_allocates_in_order_and_skips_the_tail() -> None:
    ring = OutputRing(1024)
    assert ring.try_alloc(400, released=0) == 0
    assert ring.try_alloc(400, released=0) == 448  # 400 rounds up to 448
    assert ring.allocated == 896
    assert ring.try_alloc(200, released=0) is None  # the tail is too short, the head is in use
    assert ring.try_alloc(200, released=448) == 0  # first block released: wraps to the start
    assert ring.allocated == 1024 + 256
    assert ring.try_alloc(200, released=448) is None  # would reach the unreleased second block
    assert ring.try_alloc(200, released=896) == 256


def test_output_ring_when_empty_wraps_without_waiting() -> None:
    ring = OutputRing(1024)
    assert ring.try_alloc(640, released=0) == 0
    # Everything released: a block that cannot fit before the end starts over at 0.
    assert ring.try_alloc(640, released=640) == 0
    assert ring.allocated == 1024 + 640
    assert ring.try_alloc(64, released=640) is None  # skipped tail still counts until released
    assert ring.try_alloc(64, released=1024 + 640) == 0  # empty again: back to the start


def test_output_ring_stays_at_the_start_of_the_area() -> None:
    """Blocks go back to offset 0 once there is room there, so a steady stream of small outputs
    keeps touching the same first pages instead of walking (and making resident) the whole area:
    the gateway's and the worker's RSS grew with every request."""
    ring = OutputRing(1 << 20)
    offsets = set()
    released = 0
    previous_end = None
    for _ in range(10_000):  # two outputs in flight at a time, released in order
        offset = ring.try_alloc(40, released)
        assert offset is not None
        offsets.add(offset)
        if previous_end is not None:
            released = previous_end
        previous_end = ring.allocated
    assert max(offsets) < EARLY_WRAP_ROOM + 4 * 64
    # A block that does not fit before the oldest one in use goes after the newest, as before.
    ring = OutputRing(1024)  # early-wrap room: a quarter, 256 bytes
    assert ring.try_alloc(256, released=0) == 0
    assert ring.try_alloc(64, released=0) == 256
    assert ring.try_alloc(384, released=256) == 320  # [0, 256) is free, but 384 bytes do not fit
    assert ring.try_alloc(64, released=256) == 0  # 64 bytes do, with the room: back to the start


@pytest.mark.parametrize("seed", range(3))
def test_output_ring_never_waits_while_most_of_the_area_is_free(seed: int) -> None:
    """A few outputs in flight, the oldest released in bursts of any size: a block never waits.
    (Going back to the start with room for a block or two before the oldest byte in use, or
    before the old position when nothing was in use, left about every other allocation waiting
    for the gateway — a doorbell and a process switch — while the area was nearly all free.)"""
    draw = random.Random(seed)
    ring = OutputRing(1 << 20)
    in_flight: list[int] = []
    released = 0
    for _ in range(20_000):
        if in_flight and draw.random() < 0.5:
            burst = draw.randint(1, len(in_flight))
            released = in_flight[burst - 1]
            del in_flight[:burst]
        assert ring.try_alloc(40, released) is not None
        in_flight.append(ring.allocated)


def test_output_ring_rejects_what_can_never_fit() -> None:
    ring = OutputRing(1024)
    with pytest.raises(ValueError, match="does not fit"):
        ring.try_alloc(1025, released=0)
    with pytest.raises(ValueError, match="beyond allocated"):
        ring.try_alloc(1, released=64)
    with pytest.raises(ValueError, match="multiple of 64"):
        OutputRing(1000)


@settings(max_examples=2 * settings().max_examples)  # 200 under the ci profile
@given(
    capacity_lines=st.integers(1, 64),
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 4096)), max_size=80),
)
def test_output_blocks_never_overlap_unreleased_ones(
    capacity_lines: int, ops: list[tuple[bool, int]]
) -> None:
    capacity = capacity_lines * ALIGNMENT
    ring = OutputRing(capacity)
    pending: list[tuple[int, int, int]] = []  # (offset, size, end position) in allocation order
    released = 0
    for is_alloc, n in ops:
        if is_alloc or not pending:
            nbytes = n % (capacity + 1)
            offset = ring.try_alloc(nbytes, released)
            if offset is None:
                assert pending, "an empty ring must always take a block that fits"
                continue
            size = align_up(nbytes)
            assert offset % ALIGNMENT == 0 and offset + size <= capacity
            for other, other_size, _ in pending:
                if size and other_size:  # an empty block owns no bytes
                    assert offset + size <= other or other + other_size <= offset
            pending.append((offset, size, ring.allocated))
        else:
            released = pending.pop(0)[2]  # the gateway releases in order
