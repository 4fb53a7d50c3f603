"""One gRPC or REST call as observability records it, whatever the protocol: the neutral
:class:`Call` record that the transport hooks open and fill (:mod:`~gateway.observability.calls`)
and every output reads — TF Serving's metrics (:mod:`~gateway.observability.tfs_metrics`),
tensorgate's own (:mod:`~gateway.observability.metrics`), the server span.

While a call's handler runs, :data:`CURRENT` holds its record, so the batch queue's observer
(:mod:`~gateway.observability.batches`), which runs in the request's task at enqueue time, can tie
the request to its batch.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass

from channel.logs import Traced
from gateway.observability.span_records import ServerSpan


@dataclass(slots=True, eq=False)
class Call:
    """A call being handled, then handled.

    Opened with: ``protocol`` (``"tfserving"``), ``api`` (its method name: ``Predict``,
    ``GetModelStatus``, ...; a REST call is named as the gRPC method it maps to, ``unknown``
    outside its API's grammar), ``entrypoint`` (``GRPC`` or ``REST``), ``start``
    (``time.perf_counter()`` at its handler's start). Filled by its hook: ``model`` ("" when the
    request names none), ``version`` (the version asked for; None when not known), ``status``
    (canonical code name, once it ended), ``rows`` (rows of the request, where known; None
    otherwise). Set when it ends: ``elapsed_s``. ``span``: its server span when sampled.
    With ``--enable_server_timing``, its batch's figures
    (:mod:`~gateway.observability.server_timing`): ``queue_s`` (None until it ran in a batch),
    ``batch_rows`` (its own rows in its batches), ``compute_s``.
    """

    protocol: str
    api: str
    entrypoint: str
    start: float
    model: str = ""
    version: int | None = None
    status: str = "OK"
    rows: int | None = None
    elapsed_s: float = 0.0
    span: ServerSpan | None = None
    queue_s: float | None = None
    batch_rows: int = 0
    compute_s: float = 0.0
    ids_token: Token[Traced | None] | None = None


CURRENT: ContextVar[Call | None] = ContextVar("tensorgate_call", default=None)
