"""The server's model states and front-end restarts on the metrics page, read at each scrape.

- ``tensorgate_model_state`` gauge {model_name, version, state}: 1 for each version of each
  configured model, ``state`` its TF Serving state name (``START``, ``LOADING``, ``AVAILABLE``,
  ``UNLOADING``, ``END``), as GetModelStatus reports it; a model with no version yet has none.
  An alert on "not AVAILABLE" reads ``tensorgate_model_state{state!="AVAILABLE"} == 1``;
- ``tensorgate_frontend_restarts_total`` counter: front-end processes the supervisor replaced
  after they died (written only by a server with several front ends: one process has none).

The one-process gateway and the supervisor both add these to the page
(:class:`~gateway.observability.metrics.GatewayCollector`'s live families).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from gateway.errors import NotFound
from gateway.serving.registry import Registry


def model_states(models: Registry) -> Metric:
    """``tensorgate_model_state`` of every version of every model of ``models`` now."""
    family = GaugeMetricFamily(
        "tensorgate_model_state",
        "1 for each model version, labelled with its state (TF Serving's names).",
        labels=["model_name", "version", "state"],
    )
    for name in models.model_names():
        try:
            statuses = models.statuses(name)
        except NotFound:  # removed between the two reads
            continue
        for status in statuses:
            family.add_metric([name, str(status.version), status.state.name], 1)
    return family


def frontend_restarts(restarts: int) -> Metric:
    """``tensorgate_frontend_restarts_total`` at ``restarts``."""
    family = CounterMetricFamily(
        "tensorgate_frontend_restarts", "Front-end processes replaced after they died."
    )
    family.add_metric([], restarts)
    return family


def server_families(
    models: Registry | None, restarts: Callable[[], int] | None = None
) -> Iterator[Metric]:
    """The families above that this process can write (``models``: None before any exists)."""
    if models is not None:
        yield model_states(models)
    if restarts is not None:
        yield frontend_restarts(restarts())
