"""The shared-memory channel and the tensor payload encoding, both ends in this process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from workers.dtypes import DTYPE_NAMES, dtype_name, numpy_dtype
from workers.messages import read_tensor, tensor_nbytes, write_tensor
from workers.shm.channel import Channel, ChannelFull, OutputArenaExhausted


def _worker_end(gateway: Channel) -> Channel:
    """Attach a second end in this process, on duplicates of the descriptors a child inherits."""
    argv = gateway.child_argv()
    for flag, fd in zip(
        ("--memfd", "--submit-fd", "--complete-fd"), gateway.child_fds(), strict=True
    ):
        argv[argv.index(flag) + 1] = str(os.dup(fd))
    return Channel.attach(argv)


@pytest.fixture
def pair() -> Iterator[tuple[Channel, Channel]]:
    gateway = Channel.create(
        index=3, input_bytes=1 << 16, output_bytes=1 << 14, ring_slots=4, slot_bytes=256
    )
    worker = _worker_end(gateway)
    yield gateway, worker
    worker.close()
    gateway.close()


def test_descriptors_arrive_in_order_with_their_payload(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    sent = [{"op": "ping", "id": 1}, {"op": "run", "id": 2, "deadline": 12.5, "outputs": None}]
    for desc in sent:
        gateway.submit(desc)
    assert worker.wait_submissions(0) == sent
    assert worker.wait_submissions(0) == []
    worker.post_completion({"id": 1, "ok": True, "text": "héllo"})
    assert gateway.completions() == [{"id": 1, "ok": True, "text": "héllo"}]
    assert gateway.completions() == []


def test_rings_wrap_around(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    next_id = 0
    for burst in [1, 3, 4, 2, 4, 1] * 10:
        ids = list(range(next_id, next_id + burst))
        next_id += burst
        for i in ids:
            gateway.submit({"op": "ping", "id": i})
        got = worker.wait_submissions(1.0)
        assert [d["id"] for d in got] == ids
        for desc in got:
            worker.post_completion({"id": desc["id"], "ok": True})
        assert [d["id"] for d in gateway.completions()] == ids


def test_full_ring_raises_until_a_slot_is_consumed(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    for i in range(4):
        gateway.submit({"op": "ping", "id": i})
    with pytest.raises(ChannelFull):
        gateway.submit({"op": "ping", "id": 4})
    assert [d["id"] for d in worker.wait_submissions(0)] == [0, 1, 2, 3]
    gateway.submit({"op": "ping", "id": 4})
    assert worker.wait_submissions(0) == [{"op": "ping", "id": 4}]


def test_oversized_descriptor_is_refused_and_leaves_the_ring_intact(
    pair: tuple[Channel, Channel],
) -> None:
    gateway, worker = pair
    with pytest.raises(ValueError, match="exceeds the ring slot of 252 bytes"):
        gateway.submit({"op": "ping", "id": 1, "pad": "x" * 300})
    with pytest.raises(ValueError, match="exceeds the ring slot"):
        worker.post_completion({"id": 1, "ok": False, "message": "y" * 300})
    gateway.submit({"op": "ping", "id": 2})
    assert worker.wait_submissions(0) == [{"op": "ping", "id": 2}]
    assert gateway.completions() == []


def test_wait_returns_empty_on_timeout_or_wakeup(pair: tuple[Channel, Channel]) -> None:
    _, worker = pair
    assert worker.wait_submissions(0.001) == []
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK)
    try:
        os.write(wake_w, b"\x0f")
        assert worker.wait_submissions(None, wake_fd=wake_r) == []
        with pytest.raises(BlockingIOError):
            os.read(wake_r, 1)  # drained
    finally:
        os.close(wake_r)
        os.close(wake_w)


def test_input_blocks_are_shared_without_copies(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    offset = gateway.alloc_input(x.nbytes)
    assert offset is not None and offset % 64 == 0
    write_tensor(gateway.input_view(offset, x.nbytes), x)
    seen = read_tensor(worker.input_view(offset, x.nbytes), "float32", [3, 4])
    np.testing.assert_array_equal(seen, x)
    gateway.input_view(offset, 4)[:4] = np.float32(-1).tobytes()
    assert seen[0, 0] == -1  # the worker's array is a view of the same memory
    assert gateway.input_used == 64
    del seen
    gateway.free_input(offset)
    assert gateway.input_used == 0
    assert gateway.alloc_input(gateway.input_capacity + 1) is None


def test_views_outside_an_area_are_refused(pair: tuple[Channel, Channel]) -> None:
    gateway, _ = pair
    with pytest.raises(ValueError, match="outside an area"):
        gateway.input_view(gateway.input_capacity - 8, 16)
    with pytest.raises(ValueError, match="outside an area"):
        gateway.output_view(-1, 4)


def test_output_space_comes_back_when_the_gateway_releases_it(
    pair: tuple[Channel, Channel],
) -> None:
    gateway, worker = pair
    capacity = worker.output_capacity
    assert capacity == 1 << 14
    first = worker.alloc_output(capacity // 2)
    second = worker.alloc_output(capacity // 2)
    assert (first, second) == (0, capacity // 2)
    assert gateway.output_used == capacity
    with pytest.raises(OutputArenaExhausted, match="earlier outputs were not released"):
        worker.alloc_output(64, timeout=0.01)
    gateway.release_outputs({"id": 1, "ok": True, "out_end": capacity // 2})
    gateway.release_outputs({"id": 9, "ok": False})  # no out_end: nothing to release
    assert gateway.output_used == capacity // 2
    assert worker.alloc_output(64, timeout=0.01) == 0
    assert worker.output_allocated == capacity + 64


def test_outputs_larger_than_the_area_fail_at_once(pair: tuple[Channel, Channel]) -> None:
    _, worker = pair
    with pytest.raises(
        OutputArenaExhausted,
        match="outputs of 16385 bytes exceed the worker's output arena of 16384 bytes",
    ):
        worker.alloc_output(16385)


def test_child_arguments_name_the_inherited_descriptors() -> None:
    with Channel.create(index=5, input_bytes=1, output_bytes=1) as channel:
        argv = channel.child_argv()
        assert argv[argv.index("--index") + 1] == "5"
        assert argv[argv.index("--parent-pid") + 1] == str(os.getpid())
        assert channel.child_fds() == (channel.memfd, channel.submit_fd, channel.complete_fd)
        assert channel.complete_fd in channel.child_fds()
        assert channel.input_capacity == channel.output_capacity == os.sysconf("SC_PAGE_SIZE")


def test_close_is_idempotent_and_closes_every_descriptor() -> None:
    channel = Channel.create(index=0, input_bytes=4096, output_bytes=4096)
    view = channel.input_view(0, 16)  # still exported: close must not fail
    fds = channel.child_fds()
    channel.close()
    channel.close()
    assert channel.closed
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)
    view[0] = 1  # the mapping lives as long as the view
    view.release()
    with pytest.raises(ValueError, match="closed"):
        channel.input_view(0, 1)


def test_attach_refuses_memory_that_is_not_a_channel() -> None:
    fd = os.memfd_create("not-a-channel")
    os.ftruncate(fd, 8192)
    event = os.eventfd(0)
    argv = ["--index", "0", "--memfd", str(fd), "--submit-fd", str(event)]
    try:
        with pytest.raises(ValueError, match="does not hold a tensorgate channel"):
            Channel.attach([*argv, "--complete-fd", str(event)])
    finally:
        os.close(fd)
        os.close(event)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"index": -1}, "index must be >= 0"),
        ({"input_bytes": 0}, "input_bytes and output_bytes must be >= 1"),
        ({"ring_slots": 0}, "ring_slots must be >= 1"),
        ({"slot_bytes": 100}, "slot_bytes must be a multiple of 8"),
    ],
)
def test_create_validates_its_layout(kwargs: dict[str, int], message: str) -> None:
    args: dict[str, Any] = {"index": 0, "input_bytes": 4096, "output_bytes": 4096, **kwargs}
    with pytest.raises(ValueError, match=message):
        Channel.create(**args)


# -- tensor payloads ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DTYPE_NAMES))
def test_every_dtype_name_round_trips(name: str) -> None:
    assert dtype_name(numpy_dtype(name)) == name


def test_dtype_names_cover_numpy_spellings() -> None:
    assert dtype_name(np.dtype(">i4")) == "int32"
    assert dtype_name(np.dtype("U3")) == "string"
    assert numpy_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    with pytest.raises(ValueError, match="unknown dtype"):
        numpy_dtype("float8")
    with pytest.raises(ValueError, match="no canonical name"):
        dtype_name(np.dtype("datetime64[s]"))


@pytest.mark.parametrize(
    "arr",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.arange(6, dtype=np.float16).reshape(3, 2)[::2],  # not contiguous
        np.arange(4, dtype=">i8"),  # big-endian
        np.array([True, False]),
        np.array([1 + 2j], dtype=np.complex64),
        np.arange(3, dtype=np.float32).astype(ml_dtypes.bfloat16),
        np.zeros((0, 4), dtype=np.uint16),
        np.array(7, dtype=np.uint64),
    ],
)
def test_fixed_size_tensors_round_trip(arr: np.ndarray[Any, Any]) -> None:
    buf = bytearray(tensor_nbytes(arr) + 8)
    write_tensor(memoryview(buf), arr)
    back = read_tensor(memoryview(buf), dtype_name(arr.dtype), list(arr.shape))
    assert back.dtype.isnative
    np.testing.assert_array_equal(back, arr)


def test_string_tensors_round_trip_as_bytes() -> None:
    arr = np.array([["a", "héllo"], ["", "x" * 300]], dtype=object)
    arr[0, 0] = b"\xff\x00raw"
    nbytes = tensor_nbytes(arr)
    assert nbytes == 8 * 5 + len(b"\xff\x00raw") + len("héllo".encode()) + 300
    buf = bytearray(nbytes)
    write_tensor(memoryview(buf), arr)
    back = read_tensor(memoryview(buf), "string", [2, 2])
    assert back.dtype == object and back.shape == (2, 2)
    assert back.tolist() == [[b"\xff\x00raw", "héllo".encode()], [b"", b"x" * 300]]
    empty = np.array([], dtype=object)
    buf = bytearray(tensor_nbytes(empty))
    write_tensor(memoryview(buf), empty)
    assert read_tensor(memoryview(buf), "string", [0]).shape == (0,)


def test_corrupt_or_short_payloads_are_refused() -> None:
    buf = bytearray(64)
    write_tensor(memoryview(buf), np.array([b"abc"], dtype=object))
    with pytest.raises(ValueError, match="holds 1 elements, shape says 2"):
        read_tensor(memoryview(buf), "string", [2])
    buf[8:16] = (10**6).to_bytes(8, "little")
    with pytest.raises(ValueError, match="overruns"):
        read_tensor(memoryview(buf), "string", [1])
    with pytest.raises(ValueError, match="needs 72 bytes"):
        read_tensor(memoryview(buf), "float64", [9])
    with pytest.raises(ValueError, match="negative dimension"):
        read_tensor(memoryview(buf), "float32", [-1])
    with pytest.raises(ValueError, match="view has 64"):
        write_tensor(memoryview(buf), np.zeros(9, dtype=np.float64))
    with pytest.raises(TypeError, match="element of type int"):
        tensor_nbytes(np.array([1, "a"], dtype=object))
