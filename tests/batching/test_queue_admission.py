"""Admission rules of one batch queue, as pure decisions: no loop, no clock."""

from __future__ import annotations

import pytest

from gateway.batching.queue_admission import QUEUE_FULL, SERVICE_TIME_WEIGHT, QueueAdmission
from gateway.errors import DeadlineExceeded, Unavailable


def admission(*, threads: int = 1, max_enqueued: int = 2, solo: bool = False) -> QueueAdmission:
    return QueueAdmission("m:1", threads=threads, max_enqueued_batches=max_enqueued, solo=solo)


def test_queue_full_only_past_the_bound_with_tf_servings_text() -> None:
    rules = admission(max_enqueued=2)
    assert rules.queue_full(2) is None
    refusal = rules.queue_full(3)
    assert refusal is not None and refusal.message == QUEUE_FULL


def test_queue_full_in_unbatched_mode_speaks_of_requests() -> None:
    refusal = admission(max_enqueued=4, solo=True).queue_full(5)
    assert refusal is not None
    assert refusal.message == "4 requests are already waiting for a worker; retry later"


def test_nothing_is_late_before_a_batch_was_timed() -> None:
    rules = admission()
    assert rules.service_s is None
    assert rules.too_late(now=0.0, deadline=0.001, batches_ahead=100) is None
    assert rules.finish_by(5.0) is None


def test_too_late_counts_waves_of_threads_ahead() -> None:
    rules = admission(threads=2)
    rules.record(0.1)
    # 3 batches ahead on 2 threads: this one starts in the 2nd wave and ends after 0.2 s.
    assert rules.too_late(now=0.0, deadline=0.2, batches_ahead=3) is None
    refusal = rules.too_late(now=0.0, deadline=0.19, batches_ahead=3)
    assert isinstance(refusal, DeadlineExceeded)
    assert refusal.message == (
        "Deadline exceeded: the queue of m:1 would hold this request about 200 ms, more than "
        "its deadline leaves (190 ms)"
    )
    assert rules.too_late(now=0.0, deadline=None, batches_ahead=1000) is None


def test_service_time_is_a_moving_average() -> None:
    rules = admission()
    rules.record(1.0)
    rules.record(2.0)
    assert rules.service_s == pytest.approx(1.0 + SERVICE_TIME_WEIGHT)
    assert rules.finish_by(10.0) == pytest.approx(11.0 + SERVICE_TIME_WEIGHT)


def test_latency_target_counts_the_waves_ahead_of_a_request() -> None:
    rules = QueueAdmission(
        "m:1", threads=2, max_enqueued_batches=100, solo=False, max_queue_delay_s=0.1
    )
    assert rules.too_late(now=0.0, deadline=None, batches_ahead=100) is None  # untimed yet
    rules.record(0.1)
    assert rules.too_late(now=0.0, deadline=None, batches_ahead=3) is None  # starts in 0.1 s
    refusal = rules.too_late(now=0.0, deadline=None, batches_ahead=4)  # starts in 0.2 s
    assert isinstance(refusal, Unavailable)  # retryable: the queue is the reason
    assert "over the latency target of 100 ms" in refusal.message
