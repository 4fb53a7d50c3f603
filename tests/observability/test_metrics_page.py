"""The metrics page: where it is served (``--monitoring_config_file``), and what it writes — TF
Serving's metrics exactly as TF Serving does, then tensorgate's own — for a real worker pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.model_config import ConfigError
from gateway.observability.metrics import GatewayCollector, GatewayMetrics, registry_of
from gateway.observability.metrics_page import CONTENT_TYPE, DEFAULT_PATH, MetricsPage, metrics_path
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.workers import WorkerFigures
from gateway.runs.dispatcher import Dispatcher
from gateway.worker_pool.pool import PoolOptions, WorkerPool
from tests.support.rest import made_request


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("prometheus_config { enable: true }", DEFAULT_PATH),
        ('prometheus_config { enable: true path: "/metrics" }', "/metrics"),
        ('prometheus_config { enable: false path: "/metrics" }', None),
        ("", None),
    ],
)
def test_monitoring_config_gives_the_page_path(tmp_path: Path, text: str, path: str | None) -> None:
    config = tmp_path / "monitoring.config"
    config.write_text(text)
    assert metrics_path(str(config)) == path
    assert metrics_path("") is None


def test_a_relative_page_path_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "monitoring.config"
    config.write_text('prometheus_config { enable: true path: "metrics" }')
    with pytest.raises(ConfigError, match="must start with '/'"):
        metrics_path(str(config))


async def test_the_page_is_tf_serving_s_metrics_then_tensorgate_s_with_live_worker_figures() -> (
    None
):
    pool = WorkerPool(
        PoolOptions(workers=1, input_bytes=1 << 16, output_bytes=1 << 16), dispatcher=Dispatcher()
    )
    await pool.start()
    try:
        tfs, metrics = TfServingMetrics(), GatewayMetrics()
        tfs.request_count.inc(("m", "OK"))
        workers = WorkerFigures(pool)
        page = MetricsPage(tfs, registry_of(GatewayCollector(metrics, workers.families)), workers)
        response = await page(made_request("GET", DEFAULT_PATH))
        assert response.content_type is not None
        content_type, text = response.content_type, response.body.decode()
    finally:
        await pool.close()
    assert content_type == CONTENT_TYPE
    tf_part, _, own = text.partition("# HELP")
    assert (
        tf_part.startswith("# TYPE :tensorflow:serving:") and "\n# TYPE tensorgate" not in tf_part
    )
    assert ':tensorflow:serving:request_count{model_name="m",status="OK"} 1\n' in tf_part
    assert "tensorgate_requests_in_flight" in own
    assert 'tensorgate_worker_info{pid="' in own  # the worker answered the scrape's ping
