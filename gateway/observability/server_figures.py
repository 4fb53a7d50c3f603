"""The server's model states and front-end restarts on the metrics page, read at each scrape.

- ``tensorgate_model_state`` gauge {model_name, version, state}: 1 for each version of each
  configured model, ``state`` its TF Serving state name (``START``, ``LOADING``, ``AVAILABLE``,
  ``UNLOADING``, ``END``), as GetModelStatus reports it; a model with no version yet has none.
  An alert on "not AVAILABLE" reads ``tensorgate_model_state{state!="AVAILABLE"} == 1``;
- ``tensorgate_frontend_restarts_total`` counter: front-end processes the supervisor replaced
  after they died (written only by a server with several front ends: one process has none);
- the cache of versions from object stores (``--model_cache_dir``; written once a model has an
  object URL): ``tensorgate_model_cache_bytes`` gauge (bytes of the versions held),
  ``tensorgate_model_cache_hits_total`` (versions loaded from the cache without a download),
  ``tensorgate_model_cache_downloads_total`` (versions downloaded) and
  ``tensorgate_model_cache_download_seconds_total`` (the seconds those downloads took).

The one-process gateway and the supervisor both add these to the page
(:class:`~gateway.observability.metrics.GatewayCollector`'s live families).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from gateway.errors import NotFound
from gateway.serving.registry import Registry
from gateway.storage.cache import CacheFigures

CacheReader = Callable[[], CacheFigures | None]
"""The model cache's figures now (None: no model has an object URL)."""


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


def model_cache(figures: CacheFigures) -> Iterator[Metric]:
    """The cache's four series at ``figures``."""
    held = GaugeMetricFamily(
        "tensorgate_model_cache_bytes",
        "Bytes of the model versions held in the local cache of object-store versions.",
    )
    held.add_metric([], figures.bytes)
    yield held
    for name, documentation, value in (
        ("hits", "Model versions loaded from the cache without a download.", figures.hits),
        ("downloads", "Model versions downloaded from an object store.", figures.downloads),
        (
            "download_seconds",
            "Seconds spent downloading model versions from object stores.",
            figures.download_seconds,
        ),
    ):
        family = CounterMetricFamily(f"tensorgate_model_cache_{name}", documentation)
        family.add_metric([], value)
        yield family


def server_families(
    models: Registry | None,
    restarts: Callable[[], int] | None = None,
    cache: CacheReader | None = None,
) -> Iterator[Metric]:
    """The families above that this process can write (``models``: None before any exists)."""
    if models is not None:
        yield model_states(models)
    if restarts is not None:
        yield frontend_restarts(restarts())
    figures = None if cache is None else cache()
    if figures is not None:
        yield from model_cache(figures)
