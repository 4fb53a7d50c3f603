"""Where one call's time went, in its own answer (``--enable_server_timing``): W3C Server-Timing
syntax, as the REST header ``Server-Timing`` and as the gRPC trailing metadata ``server-timing``
(the same value).

The value names, in this order (``dur`` in milliseconds, the Server-Timing unit, 3 decimals):

- ``queue;dur=``: the request's wait in its batch queue, from joining it to its batch being posted;
- ``rows;desc="N"``: the request's own rows in that batch — never the batch's total, which would
  tell a caller how much traffic others send;
- ``compute;dur=``: the runtime's own time for that batch, as the worker measured it (as
  ``tensorgate_compute_seconds``);
- ``total;dur=``: from the call's handler starting to its answer being encoded.

Example: ``queue;dur=0.041, rows;desc="1", compute;dur=0.092, total;dur=0.734``. A call that ran
no batch (metadata, status, a refused or failed request) carries ``total`` alone. A request split
over several batches (large-batch splitting) reports its longest wait, its rows over all of them
and the longest compute. The queue and compute figures are the ones the per-model histograms
observe, so the two agree. Off (the default), no hook does any of this.
"""

from __future__ import annotations

import time

from gateway.observability.call_record import Call

HEADER = "Server-Timing"
"""The REST response header."""

METADATA_KEY = "server-timing"
"""The gRPC trailing metadata key (lower case, as gRPC requires)."""


def note_batch(call: Call, wait_s: float, rows: int, compute_s: float) -> None:
    """Record on ``call`` one batch its request ran in (seconds; ``rows``: the request's own rows
    in it)."""
    if call.queue_s is None:
        call.queue_s, call.batch_rows, call.compute_s = wait_s, rows, compute_s
        return
    call.queue_s = max(call.queue_s, wait_s)
    call.batch_rows += rows
    call.compute_s = max(call.compute_s, compute_s)


def value(call: Call) -> str:
    """The Server-Timing value of ``call`` now (its total runs until this moment)."""
    total = f"total;dur={(time.perf_counter() - call.start) * 1e3:.3f}"
    if call.queue_s is None:
        return total
    return (
        f'queue;dur={call.queue_s * 1e3:.3f}, rows;desc="{call.batch_rows}", '
        f"compute;dur={call.compute_s * 1e3:.3f}, {total}"
    )
