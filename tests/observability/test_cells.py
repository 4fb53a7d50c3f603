"""Counters and histograms keyed by label values: TensorFlow's and Prometheus' bucket rules."""

from __future__ import annotations

from gateway.observability.cells import Counter, Histogram, exponential_buckets


def test_exponential_buckets_multiply_as_tensorflow_does() -> None:
    assert exponential_buckets(10, 1.8, 3) == (10, 18.0, 32.4)
    assert exponential_buckets(1, 2, 4) == (1, 2, 4, 8)


def test_a_value_on_a_bound_lands_below_it_in_prometheus_and_above_it_in_tensorflow() -> None:
    le = Histogram(("m",), (1, 2, 4), "le")
    lt = Histogram(("m",), (1, 2, 4), "lt")
    for histogram in (le, lt):
        for value in (2, 2, 5):
            histogram.observe(("a",), value)
    ((_, le_cell),) = le.items()
    ((_, lt_cell),) = lt.items()
    assert le_cell.counts == [0, 2, 0, 1] and lt_cell.counts == [0, 0, 2, 1]
    assert le_cell.cumulative() == [0, 2, 2, 3] and le_cell.total == 9


def test_series_are_listed_in_label_order() -> None:
    counter = Counter(("model", "status"))
    for labels in (("b", "OK"), ("a", "OK"), ("b", "OK")):
        counter.inc(labels)
    counter.inc(("a", "NOT_FOUND"), 3)
    assert list(counter.items()) == [(("a", "NOT_FOUND"), 3), (("a", "OK"), 1), (("b", "OK"), 2)]
    histogram = Histogram(("m",), (1.0,))
    for model in ("z", "a"):
        histogram.observe((model,), 0.5)
    assert [labels for labels, _ in histogram.items()] == [("a",), ("z",)]


def test_deferred_counts_and_observations_are_there_whenever_read() -> None:
    counter = Counter(("m",))
    counter.inc(("a",))
    counter.pending.extend([("a",), ("b",)])  # what a hot path appends
    assert counter.values == {("a",): 2, ("b",): 1}
    assert not counter.pending
    counter.pending.append(("b",))
    assert list(counter.items()) == [(("a",), 2), (("b",), 2)]
    histogram = Histogram(("m",), (1.0, 2.0), "lt")
    histogram.observe(("a",), 0.5)
    histogram.pending.extend([(("a",), 2.0), (("b",), 5.0)])
    assert histogram.cells[("a",)].counts == [1, 0, 1]  # TF's rule: 2.0 lands above 2
    assert histogram.cells[("b",)].counts == [0, 0, 1] and histogram.cells[("b",)].total == 5.0
    histogram.pending.append((("a",), 1.5))
    assert [labels for labels, _ in histogram.items()] == [("a",), ("b",)]
    assert histogram.cells[("a",)].counts == [1, 1, 1]
