"""bench.load.histogram: bucket layout, percentiles within the stated error, merging, round trip."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.load.histogram import SUB_BITS, Histogram, bucket_bounds, bucket_index, merged

MAX_REL_ERROR = 1 / 2 ** (SUB_BITS - 1)


@given(st.integers(min_value=0, max_value=10**12))
def test_every_value_lies_in_its_bucket(value: int) -> None:
    low, high = bucket_bounds(bucket_index(value))
    assert low <= value < high
    if value >= 2**SUB_BITS:
        assert (high - low) / low <= MAX_REL_ERROR


def test_bucket_indices_are_monotonic() -> None:
    indices = [bucket_index(v) for v in range(0, 100_000, 7)]
    assert indices == sorted(indices)


def test_percentiles_match_exact_ranks_within_the_bucket_error() -> None:
    rng = random.Random(1)
    values = [int(rng.lognormvariate(13, 1)) for _ in range(20_000)]
    hist = Histogram()
    for v in values:
        hist.record(v)
    values.sort()
    for pct in (1, 10, 50, 90, 99, 99.9):
        exact = values[max(0, -(-int(pct * len(values)) // 100) - 1)]
        assert abs(hist.percentile(pct) - exact) <= exact * MAX_REL_ERROR + 1
    assert hist.percentile(0) == values[0]
    assert hist.percentile(100) == values[-1]
    assert hist.count == len(values)
    assert hist.mean_ns == pytest.approx(sum(values) / len(values))


def test_merge_equals_recording_everything_in_one() -> None:
    a, b, both = Histogram(), Histogram(), Histogram()
    for i in range(1, 500):
        (a if i % 3 else b).record(i * 1000)
        both.record(i * 1000)
    assert merged([a, b]) == both
    assert merged([Histogram(), a]).min_ns == a.min_ns


def test_dict_round_trip_and_empty_histogram() -> None:
    hist = Histogram()
    assert hist.percentile(50) == 0 and hist.mean_ns == 0.0
    for v in (5, 500, 5_000_000):
        hist.record(v)
    assert Histogram.from_dict(hist.to_dict()) == hist
    with pytest.raises(ValueError, match="percentile"):
        hist.percentile(101)
