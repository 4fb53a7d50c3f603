"""tensorgate's own counters around a measured point: scraped from its Prometheus page before and
after, turned into figures per request.

A scrape (:func:`scrape`) sums each counter over its labels (every worker, every API):

- ``requests``: ``tensorgate_request_duration_seconds_count`` (calls answered, every API);
- ``runs``: ``tensorgate_worker_runs_total`` (batches the workers ran);
- ``wakeups``: ``tensorgate_worker_wakeups_total`` (times a worker woke from sleep to take runs:
  each one submit doorbell);
- ``worker_cpu_s``: ``tensorgate_worker_cpu_seconds_total`` (user + system, seconds).

:func:`per_request` gives the deltas per request: ``runs_per_request``,
``wakeups_per_request``, ``rows_per_run`` (requests / runs: the mean batch size, one row per
request) and ``worker_cpu_us_per_request`` (µs). The scrapes lie outside the point's window (a
scrape pings every worker), so they cost the point nothing; warm-up is inside both.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from typing import Any

SERIES = {
    "requests": "tensorgate_request_duration_seconds_count",
    "runs": "tensorgate_worker_runs_total",
    "wakeups": "tensorgate_worker_wakeups_total",
    "worker_cpu_s": "tensorgate_worker_cpu_seconds_total",
}
"""Scraped totals by the Prometheus series they sum."""
SCRAPE_TIMEOUT_S = 10.0


def parse(page: str) -> dict[str, float]:
    """The totals of :data:`SERIES` on a Prometheus text page (0 for a series not on it)."""
    names = {series: key for key, series in SERIES.items()}
    totals = dict.fromkeys(SERIES, 0.0)
    for line in page.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in names:
            totals[names[name]] += float(line.rsplit(" ", 1)[1])
    return totals


def scrape(url: str) -> dict[str, float]:
    """:func:`parse` of the page at ``url``."""
    with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as answer:
        return parse(answer.read().decode())


def per_request(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The figures per request between two scrapes (see the module doc); {} when no request was
    answered in between; ``rows_per_run`` only when a run was."""
    delta = {k: after[k] - before[k] for k in SERIES}
    requests = delta["requests"]
    if requests <= 0:
        return {}
    out = {
        "runs_per_request": delta["runs"] / requests,
        "wakeups_per_request": delta["wakeups"] / requests,
        "worker_cpu_us_per_request": delta["worker_cpu_s"] / requests * 1e6,
    }
    if delta["runs"] > 0:
        out["rows_per_run"] = requests / delta["runs"]
    return out


def counted(url: str | None, point: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``point()``'s result, with :func:`per_request`'s figures when ``url`` (the system's
    metrics page) is given."""
    if url is None:
        return point()
    before = scrape(url)
    result = point()
    result.update(per_request(before, scrape(url)))
    return result
