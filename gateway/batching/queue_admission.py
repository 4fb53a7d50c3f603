"""Admission for one batch queue: refuse at once what cannot be served, never block.

Three rules, checked at submission time:

- **Queue full:** a request that would need more than ``max_enqueued_batches`` waiting batches is
  refused with TF Serving's text (:data:`QUEUE_FULL`): UNAVAILABLE, retryable.
- **Over the latency target** (``max_queue_delay_s`` > 0, ``--max_queue_delay_ms``): once batches
  have been timed (a moving average of dispatch-to-completion seconds,
  :attr:`QueueAdmission.service_s`), a request is refused with UNAVAILABLE (retryable) when the
  batches ahead of it — run ``threads`` at a time — would delay the start of its own by more than
  the target, so under overload accepted requests keep a bounded latency and the excess is
  rejected, not timed out.
- **Its own deadline too short:** a request whose deadline falls before its batch could finish (the
  batches ahead of it, then its own) gets DEADLINE_EXCEEDED at once, as TF Serving answers a
  deadline that expires while queued: retrying it with the same deadline could not help. At
  dispatch, :meth:`QueueAdmission.finish_by` tells which queued requests can no longer finish in
  time (they are dropped with DEADLINE_EXCEEDED instead of being computed for nobody).
"""

from __future__ import annotations

from gateway.errors import DeadlineExceeded, ServingError, Unavailable

QUEUE_FULL = "The batch scheduling queue to which this task was submitted is full"
SERVICE_TIME_WEIGHT = 0.2
"""Weight of the newest batch in the moving average of batch service time."""


class QueueAdmission:
    """The refusal rules of one queue named ``queue`` (for messages), with ``threads`` batches
    allowed in flight at once and at most ``max_enqueued_batches`` waiting. ``solo``: unbatched
    mode, where each request is its own batch (the queue-full text then speaks of requests)."""

    def __init__(
        self,
        queue: str,
        *,
        threads: int,
        max_enqueued_batches: int,
        solo: bool,
        max_queue_delay_s: float = 0.0,
    ) -> None:
        self.queue = queue
        self.threads = max(1, threads)
        self.max_enqueued_batches = max_enqueued_batches
        self.solo = solo
        self.max_queue_delay_s = max_queue_delay_s
        self.service_s: float | None = None
        """Moving average of a batch's dispatch-to-completion time (seconds); None until timed."""

    def queue_full(self, waiting_batches: int) -> Unavailable | None:
        """The refusal when ``waiting_batches`` (after this request) exceeds the bound."""
        if waiting_batches <= self.max_enqueued_batches:
            return None
        if self.solo:
            return Unavailable(
                f"{self.max_enqueued_batches} requests are already waiting for a worker; "
                "retry later"
            )
        return Unavailable(QUEUE_FULL)

    def too_late(
        self, now: float, deadline: float | None, batches_ahead: int
    ) -> ServingError | None:
        """The refusal when ``batches_ahead`` (queued or in flight before this request's batch)
        would delay it past the latency target (UNAVAILABLE) or its batch would end past
        ``deadline`` (DEADLINE_EXCEEDED); None while batches are untimed."""
        if self.service_s is None:
            return None
        if self.max_queue_delay_s > 0:
            delay_s = batches_ahead // self.threads * self.service_s
            if delay_s > self.max_queue_delay_s:
                return Unavailable(
                    f"the queue of {self.queue} would delay this request about "
                    f"{delay_s * 1000:.0f} ms, over the latency target of "
                    f"{self.max_queue_delay_s * 1000:.0f} ms (--max_queue_delay_ms); retry later"
                )
        if deadline is None:
            return None
        waves = batches_ahead // self.threads
        wait_s = (waves + 1) * self.service_s
        if now + wait_s <= deadline:
            return None
        left_ms = max(0.0, deadline - now) * 1000
        what = (
            f"a batch of {self.queue} takes about {self.service_s * 1000:.0f} ms"
            if waves == 0
            else f"the queue of {self.queue} would hold this request about {wait_s * 1000:.0f} ms"
        )
        return DeadlineExceeded(
            f"Deadline exceeded: {what}, more than its deadline leaves ({left_ms:.0f} ms)"
        )

    def finish_by(self, now: float) -> float | None:
        """When a batch dispatched at ``now`` should finish (None while untimed)."""
        return None if self.service_s is None else now + self.service_s

    def record(self, seconds: float) -> None:
        """Fold one batch's dispatch-to-completion time into :attr:`service_s`."""
        if self.service_s is None:
            self.service_s = seconds
        else:
            self.service_s += SERVICE_TIME_WEIGHT * (seconds - self.service_s)
