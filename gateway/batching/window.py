"""How long a zero-timeout queue holds its open batch: the concurrency window.

With ``batch_timeout_micros`` 0 a batch goes as soon as a worker slot is free (work-conserving);
when the event loop, not the worker, is the bottleneck, that would send every request alone. The
window makes batches form under concurrency, and only then, and only while company can still come:
it remembers how many of its queue's requests were present together lately (waiting or running, a
decaying peak), and a batch that, with what runs, already holds that many goes at once (four
closed-loop clients fill a batch of four: nobody else will join it). Each arriving request says how
many of its queue's requests are present with it (waiting or running, itself included); it found
company when that is more than one. While most arrivals do (:data:`OVERLAP_THRESHOLD` of a moving
average), an open batch is held until :data:`WINDOW_S` after it opened, until it is full, or until
one of its requests could no longer be served in time, whichever comes first; then it goes. A client
that sends one request at a time never finds company, so at concurrency 1 nothing waits (its request
leaves at the end of the loop turn it arrived in). A model whose runs take longer than the window is
unaffected (its next batch is older than the window when the running one ends).

Pure arithmetic on the scheduler's clock: no timers here (the scheduler arms them).
"""

from __future__ import annotations

WINDOW_S = 0.001
"""Longest hold of an open batch after its first request joined (seconds): a few requests' worth
at the loop's rate, a small fraction of the latency that concurrency brings anyway."""

OVERLAP_WEIGHT = 0.05
"""Weight of the newest arrival in the moving average of arrivals that found company: the window
opens after about six arrivals in a row found company (a sustained load, not a short burst) and
closes after about 25 in a row found none."""

OVERLAP_THRESHOLD = 0.25
"""The moving average above which the queue counts as concurrent (holds its batches)."""

PEAK_DECAY = 0.98
"""Per arrival, how much of the peak of requests seen together is remembered: after the number of
callers drops, the peak follows within a few dozen arrivals."""


class ConcurrencyWindow:
    """One queue's window (see the module docstring). ``window_s``: the longest hold."""

    __slots__ = ("concurrent", "overlap", "peak", "window_s")

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self.overlap = 0.0
        """Moving average of arrivals that found company (0: never, 1: always)."""
        self.peak = 0.0
        """Decaying peak of the requests present together (waiting or running)."""
        self.concurrent = False
        """Whether open batches are held now (the moving average is over
        :data:`OVERLAP_THRESHOLD`)."""

    def arrival(self, present: int) -> None:
        """Note one arriving request; ``present``: the queue's requests waiting or running with
        it (itself included; more than 1: it found company)."""
        self.overlap += OVERLAP_WEIGHT * ((1.0 if present > 1 else 0.0) - self.overlap)
        self.concurrent = self.overlap > OVERLAP_THRESHOLD
        peak = self.peak * PEAK_DECAY
        self.peak = present if present > peak else peak

    def hold_until(
        self, opened_at: float, send_by: float | None, now: float, present: int = 0
    ) -> float | None:
        """When an open batch that opened at ``opened_at`` should go, if later than ``now``;
        None: now. ``send_by``: the latest time its requests allow (their deadlines less a
        batch's service time; None: no deadline). ``present``: the queue's requests waiting or
        running now; as many as the peak means no other caller is left to join."""
        if not self.concurrent or present >= self.peak:
            return None
        until = opened_at + self.window_s
        if send_by is not None and send_by < until:
            until = send_by
        return until if until > now else None
