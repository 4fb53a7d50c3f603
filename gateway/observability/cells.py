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
from dataclasses import dataclass
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
    """A monotonic count per label-value tuple (``label_names`` name the positions).

    A hot path may defer a count of one: ``counter.pending.append(labels)`` (no call), folded in
    whenever the counts are read (:attr:`values`, :meth:`items`) or more than
    :data:`DEFER_LIMIT` wait."""

    def __init__(self, label_names: Labels) -> None:
        self.label_names = label_names
        self._values: dict[Labels, float] = {}
        self.pending: list[Labels] = []
        """Counts of one, not yet folded into :attr:`values`."""

    @property
    def values(self) -> dict[Labels, float]:
        """Every count, the pending ones folded in."""
        if self.pending:
            self.fold()
        return self._values

    def inc(self, labels: Labels, amount: float = 1) -> None:
        self._values[labels] = self._values.get(labels, 0) + amount

    def fold(self) -> None:
        """Fold the pending counts in."""
        values, pending, self.pending = self._values, self.pending, []
        for labels in pending:
            values[labels] = values.get(labels, 0) + 1

    def items(self) -> Iterator[tuple[Labels, float]]:
        """(labels, value) in label order."""
        values = self.values
        for labels in sorted(values):
            yield labels, values[labels]


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


class Histogram:
    """A distribution per label-value tuple over fixed ``bounds`` (ascending, +Inf implicit).

    A hot path may defer an observation: ``histogram.pending.append((labels, value))`` (no
    call), folded in whenever the cells are read (:attr:`cells`, :meth:`items`) or more than
    :data:`DEFER_LIMIT` wait."""

    def __init__(
        self, label_names: Labels, bounds: Sequence[float], rule: Literal["le", "lt"] = "le"
    ) -> None:
        self.label_names = label_names
        self.bounds = bounds
        self.rule = rule
        self._cells: dict[Labels, Cell] = {}
        self.pending: list[tuple[Labels, float]] = []
        """Observations not yet folded into :attr:`cells`."""

    @property
    def cells(self) -> dict[Labels, Cell]:
        """Every series, the pending observations folded in."""
        if self.pending:
            self.fold()
        return self._cells

    def observe(self, labels: Labels, value: float) -> None:
        cell = self._cells.get(labels)
        if cell is None:
            cell = self._cells[labels] = Cell([0] * (len(self.bounds) + 1))
        find = bisect.bisect_left if self.rule == "le" else bisect.bisect_right
        cell.counts[find(self.bounds, value)] += 1
        cell.total += value

    def fold(self) -> None:
        """Fold the pending observations in."""
        pending, self.pending = self.pending, []
        cells, bounds, width = self._cells, self.bounds, len(self.bounds) + 1
        find = bisect.bisect_left if self.rule == "le" else bisect.bisect_right
        for labels, value in pending:
            cell = cells.get(labels)
            if cell is None:
                cell = cells[labels] = Cell([0] * width)
            cell.counts[find(bounds, value)] += 1
            cell.total += value

    def items(self) -> Iterator[tuple[Labels, Cell]]:
        """(labels, cell) in label order."""
        cells = self.cells
        for labels in sorted(cells):
            yield labels, cells[labels]


DEFER_LIMIT = 4096
"""The most deferred observations a series holds before its hot path folds them in."""
