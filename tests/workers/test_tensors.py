"""A run's tensors in a real channel's areas: inputs as views without a copy, outputs packed into
one aligned block, strings as UTF-8 both ways."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from channel.dtypes import dtype_name
from channel.messages import TensorDesc, WorkerError
from channel.shm.channel import Channel
from channel.shm.payload import tensor_at, tensor_nbytes, write_tensor
from workers.tensors import read_inputs, write_outputs


@pytest.fixture
def channel() -> Iterator[Channel]:
    with Channel.create(index=0, input_bytes=1 << 14, output_bytes=1 << 14) as created:
        yield created


def _put(channel: Channel, name: str, arr: np.ndarray[Any, Any]) -> TensorDesc:
    nbytes = tensor_nbytes(arr)
    offset = channel.alloc_input(nbytes)
    assert offset is not None
    write_tensor(channel.input_view(offset, nbytes), arr)
    return TensorDesc(name, dtype_name(arr.dtype), arr.shape, offset, nbytes)


def test_a_numeric_input_is_a_view_on_the_input_area(channel: Channel) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    desc = _put(channel, "x", x)
    feeds = read_inputs(channel, (desc,), as_text=True)
    assert list(feeds) == ["x"]
    np.testing.assert_array_equal(feeds["x"], x)
    channel.input_view(desc.offset, 4)[:] = np.float32(7).tobytes()
    assert feeds["x"][0, 0] == 7  # the same memory: no copy was made
    del feeds


def test_string_inputs_are_text_or_bytes_as_the_backend_wants(channel: Channel) -> None:
    desc = _put(channel, "s", np.array([[b"a", "é".encode()]], dtype=object))
    text = read_inputs(channel, (desc,), as_text=True)["s"]
    assert text.shape == (1, 2) and text.tolist() == [["a", "é"]]
    raw = read_inputs(channel, (desc,), as_text=False)["s"]
    assert raw.tolist() == [[b"a", "é".encode()]]


def test_inputs_that_do_not_read_are_invalid(channel: Channel) -> None:
    desc = _put(channel, "s", np.array([b"\xff"], dtype=object))
    with pytest.raises(WorkerError, match="string input 's' is not valid UTF-8") as raised:
        read_inputs(channel, (desc,), as_text=True)
    assert raised.value.code == "INVALID_ARGUMENT"
    outside = desc._replace(offset=1 << 14, nbytes=64)
    with pytest.raises(WorkerError, match=r"input tensor 's': block .* lies outside") as raised:
        read_inputs(channel, (outside,), as_text=False)
    assert raised.value.code == "INVALID_ARGUMENT"
    short = desc._replace(dtype="float64", shape=(2,), nbytes=8)
    with pytest.raises(WorkerError, match=r"input tensor 's': float64\[2\] needs 16 bytes"):
        read_inputs(channel, (short,), as_text=False)


def test_outputs_share_one_block_each_aligned(channel: Channel) -> None:
    results = {
        "y": np.arange(3, dtype=np.int64),
        "words": np.array(["ab", "ç"]),
        "flags": np.array([[True], [False]]),
    }
    descs = write_outputs(channel, results)
    assert [d.name for d in descs] == ["y", "words", "flags"]
    assert [d.dtype for d in descs] == ["int64", "string", "bool"]
    assert [d.shape for d in descs] == [(3,), (2,), (2, 1)]
    assert descs[0].offset == 0 and all(d.offset % 64 == 0 for d in descs)
    assert descs[1].offset == 64 and descs[2].offset > descs[1].offset
    assert channel.output_allocated == descs[2].offset + 64
    read = {d.name: tensor_at(channel.output_readonly, d) for d in descs}
    np.testing.assert_array_equal(read["y"], results["y"])
    assert read["words"].tolist() == [b"ab", "ç".encode()]
    np.testing.assert_array_equal(read["flags"], results["flags"])
    del read


def test_outputs_the_area_cannot_hold_are_resource_exhausted(channel: Channel) -> None:
    with pytest.raises(WorkerError, match="exceed the worker's output arena") as raised:
        write_outputs(channel, {"big": np.zeros(1 << 13, np.float32)})
    assert raised.value.code == "RESOURCE_EXHAUSTED"
    assert channel.output_allocated == 0  # nothing was taken
