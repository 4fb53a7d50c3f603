"""The binary layout of a worker's spans: encoded once per form, decoded on demand, refused
when damaged."""

from __future__ import annotations

from typing import Any

import pytest

from channel import messages
from channel.binary import Malformed
from channel.span_wire import SpanForm, WorkerSpans

SPAN: dict[str, Any] = {
    "pid": 77,
    "name": "compute",
    "span_id": 2**64 - 1,
    "parent_id": 1,
    "start_ns": 1_700_000_000_000_000_000,
    "end_ns": 1_700_000_000_000_000_500,
    "attributes": {"s": "mlp:1", "i": -(2**63), "f": 0.25, "t": True, "n": False},
}


def test_worker_spans_travel_encoded_and_decode_on_demand() -> None:
    spans = WorkerSpans.of([SPAN, {**SPAN, "name": "ünïcode", "attributes": {}}])
    reply = messages.run_reply(3, outputs=[], out_end=64, compute_us=1.5, spans=spans)
    decoded = messages.decode_reply(messages.encode(reply))
    assert isinstance(decoded, messages.RunReply) and decoded.spans == spans
    assert spans.records() == [SPAN, {**SPAN, "name": "ünïcode", "attributes": {}}]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), None, [1]])
def test_span_attributes_that_cannot_travel_are_refused(value: object) -> None:
    with pytest.raises(ValueError, match="span attribute"):
        WorkerSpans.of([{**SPAN, "attributes": {"bad": value}}])


@pytest.mark.parametrize(
    ("count", "cut", "message"),
    [(1, 10, "truncated"), (2, None, "truncated"), (0, None, "trailing"), (1, -1, "truncated")],
)
def test_spans_that_do_not_decode_are_malformed(count: int, cut: int | None, message: str) -> None:
    data = WorkerSpans.of([SPAN]).data[:cut]
    with pytest.raises(Malformed, match=message):
        WorkerSpans(count, data).records()


def test_a_span_attribute_of_unknown_type_is_malformed() -> None:
    data = WorkerSpans.of([{**SPAN, "attributes": {"k": "v"}}]).data
    bad = data.replace(b"\x01\x00ks", b"\x01\x00kz")
    assert bad != data
    with pytest.raises(Malformed, match="no type"):
        WorkerSpans(1, bad).records()


def test_repeated_spans_decode_the_same_from_the_cache_and_stay_apart_by_type() -> None:
    spans = [{**SPAN, "attributes": {"v": value}} for value in (1, True, 1.0, "1")]
    for span in spans * 2:  # the second time from the caches
        decoded = WorkerSpans.of([span]).records()
        assert decoded == [span] and type(decoded[0]["attributes"]["v"]) is type(
            span["attributes"]["v"]
        )
    fresh = {**SPAN, "attributes": {"v": "decoded once"}}
    for _ in range(2):  # the first decode fills the cache, the second reads it
        first = WorkerSpans.of([fresh]).records()
        first[0]["attributes"]["v"] = 99  # a caller's change does not reach the cache
        assert WorkerSpans.of([fresh]).records() == [fresh]
    other = {**spans[0], "span_id": 5, "start_ns": 7, "end_ns": 8, "pid": 9}
    assert WorkerSpans.of([other]).records() == [other]


def test_a_form_packs_only_ids_and_times_and_decodes_like_a_record() -> None:
    form = SpanForm.of(SPAN["name"], SPAN["attributes"])
    spans = form.spans(SPAN["start_ns"], SPAN["end_ns"], SPAN["span_id"], SPAN["parent_id"], 77)
    assert spans == WorkerSpans.of([SPAN])
    assert spans.records() == [SPAN]
    later = form.spans(1, 2, 3, 4, 77)
    assert len(later.data) == len(spans.data)  # the name and attributes are the same bytes
    assert later.records() == [{**SPAN, "start_ns": 1, "end_ns": 2, "span_id": 3, "parent_id": 4}]


def test_single_reads_one_span_without_decoding_and_nothing_else() -> None:
    spans = WorkerSpans.of([SPAN])
    single = spans.single()
    assert single is not None
    assert single[:5] == (SPAN["start_ns"], SPAN["end_ns"], SPAN["span_id"], 1, 77)
    assert single[5] == SpanForm.of(SPAN["name"], SPAN["attributes"]).named
    assert WorkerSpans.of([SPAN, SPAN]).single() is None
    assert WorkerSpans(1, b"short").single() is None
