"""A mergeable latency histogram with bounded relative error (HDR-style log-linear buckets).

Values are integer nanoseconds. Values below ``2**SUB_BITS`` ns get exact buckets; above, each
power of two is split into ``2**(SUB_BITS - 1)`` equal sub-buckets, so a bucket's width is at most
``1 / 2**(SUB_BITS - 1)`` of its lower bound (SUB_BITS = 7: ≤ 1.6 %). Percentiles report the
bucket's midpoint clamped to the exact min/max seen. Histograms from several processes merge by
adding counts; they travel as plain dicts (:meth:`to_dict` / :meth:`from_dict`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SUB_BITS = 7
_SUB = 1 << SUB_BITS
_HALF = _SUB >> 1


def bucket_index(value_ns: int) -> int:
    """The bucket holding ``value_ns`` (negative values count as 0)."""
    if value_ns < _SUB:
        return max(0, value_ns)
    shift = value_ns.bit_length() - SUB_BITS
    return shift * _HALF + (value_ns >> shift)


def bucket_bounds(index: int) -> tuple[int, int]:
    """``[low, high)`` in nanoseconds of bucket ``index`` (inverse of :func:`bucket_index`)."""
    if index < _SUB:
        return index, index + 1
    shift = index // _HALF - 1
    mantissa = index - shift * _HALF
    return mantissa << shift, (mantissa + 1) << shift


@dataclass
class Histogram:
    """Counts per bucket plus exact count, sum, min and max (all in nanoseconds)."""

    counts: dict[int, int] = field(default_factory=dict)
    count: int = 0
    total_ns: int = 0
    min_ns: int = 0
    max_ns: int = 0

    def record(self, value_ns: int) -> None:
        """Add one observation."""
        index = bucket_index(value_ns)
        self.counts[index] = self.counts.get(index, 0) + 1
        if self.count == 0 or value_ns < self.min_ns:
            self.min_ns = value_ns
        if value_ns > self.max_ns:
            self.max_ns = value_ns
        self.count += 1
        self.total_ns += value_ns

    def merge(self, other: Histogram) -> None:
        """Add ``other``'s observations to this histogram."""
        if other.count == 0:
            return
        for index, n in other.counts.items():
            self.counts[index] = self.counts.get(index, 0) + n
        self.min_ns = other.min_ns if self.count == 0 else min(self.min_ns, other.min_ns)
        self.max_ns = max(self.max_ns, other.max_ns)
        self.count += other.count
        self.total_ns += other.total_ns

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.count if self.count else 0.0

    def percentile(self, pct: float) -> int:
        """The ``pct`` (0–100) percentile in ns (nearest rank); 0 when empty."""
        if not 0.0 <= pct <= 100.0:
            raise ValueError(f"percentile must be in [0, 100], got {pct}")
        if self.count == 0:
            return 0
        rank = max(1, -(-int(pct * self.count) // 100)) if pct > 0 else 1
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                low, high = bucket_bounds(index)
                mid = (low + high - 1) // 2
                return min(max(mid, self.min_ns), self.max_ns)
        return self.max_ns

    def buckets(self) -> list[tuple[int, int, int]]:
        """Non-empty buckets as ``(low_ns, high_ns, count)`` in ascending order."""
        return [(*bucket_bounds(i), self.counts[i]) for i in sorted(self.counts)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": {str(k): v for k, v in self.counts.items()},
            "count": self.count,
            "total_ns": self.total_ns,
            "min_ns": self.min_ns,
            "max_ns": self.max_ns,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Histogram:
        return cls(
            counts={int(k): int(v) for k, v in data["counts"].items()},
            count=int(data["count"]),
            total_ns=int(data["total_ns"]),
            min_ns=int(data["min_ns"]),
            max_ns=int(data["max_ns"]),
        )


def merged(histograms: Iterable[Histogram]) -> Histogram:
    """One histogram holding every observation of ``histograms``."""
    out = Histogram()
    for h in histograms:
        out.merge(h)
    return out
