"""Counters and histograms keyed by label values, cheap enough for every request.

Only the event loop touches them (requests, batches and scrapes all run there), so there are no
locks; a scrape reads a consistent picture. Two bucket rules exist:

- ``"le"`` (Prometheus): a value lands in the first bucket whose bound is >= the value;
- ``"lt"`` (TensorFlow's ``monitoring::Sampler``, ``upper_bound``): in the first bucket whose bound
  is > the value — so TF Serving's page shows a value of exactly 2 under ``le="4"``, not
  ``le="2"``, and tensorgate reproduces that.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

Labels = tuple[str, ...]


def exponential_buckets(scale: float, growth: float, count: int) -> tuple[float, ...]:
    """TensorFlow's ``Buckets::Exponential``: ``count`` bounds ``scale * growth**i``, computed by
    repeated multiplication as TF does (an implicit +Inf bucket follows)."""
    bounds = []
    bound = scale
    for _ in range(count):
        bounds.append(bound)
        bound *= growth
    return tuple(bounds)


class Counter:
    """A monotonic count per label-value tuple (``label_names`` name the positions)."""

    def __init__(self, label_names: Labels) -> None:
        self.label_names = label_names
        self.values: dict[Labels, float] = {}

    def inc(self, labels: Labels, amount: float = 1) -> None:
        self.values[labels] = self.values.get(labels, 0) + amount

    def items(self) -> Iterator[tuple[Labels, float]]:
        """(labels, value) in label order."""
        for labels in sorted(self.values):
            yield labels, self.values[labels]


@dataclass
class Cell:
    """One histogram series: non-cumulative ``counts`` per bucket (the last is +Inf) and the
    ``total`` of every value observed."""

    counts: list[int]
    total: float = 0.0

    def cumulative(self) -> list[int]:
        out, running = [], 0
        for count in self.counts:
            running += count
            out.append(running)
        return out


@dataclass
class Histogram:
    """A distribution per label-value tuple over fixed ``bounds`` (ascending, +Inf implicit)."""

    label_names: Labels
    bounds: Sequence[float]
    rule: Literal["le", "lt"] = "le"
    cells: dict[Labels, Cell] = field(default_factory=dict)

    def observe(self, labels: Labels, value: float) -> None:
        cell = self.cells.get(labels)
        if cell is None:
            cell = self.cells[labels] = Cell([0] * (len(self.bounds) + 1))
        find = bisect.bisect_left if self.rule == "le" else bisect.bisect_right
        cell.counts[find(self.bounds, value)] += 1
        cell.total += value

    def items(self) -> Iterator[tuple[Labels, Cell]]:
        """(labels, cell) in label order."""
        for labels in sorted(self.cells):
            yield labels, self.cells[labels]
