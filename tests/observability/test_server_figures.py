"""The models' states and the front-end restarts on the page, read from the registry at scrape."""

from __future__ import annotations

from prometheus_client import generate_latest

from gateway.errors import NotFound
from gateway.observability.metrics import GatewayCollector, GatewayMetrics, registry_of
from gateway.observability.server_figures import server_families
from gateway.serving.registry import State, VersionStatus


class _Models:
    """The registry seam: two models, one of them removed between the two reads."""

    def model_names(self) -> list[str]:
        return ["mlp", "gone", "resnet"]

    def statuses(self, name: str, version: int | None = None) -> list[VersionStatus]:
        if name == "gone":
            raise NotFound(f"Servable not found for request: Latest({name})")
        if name == "mlp":
            return [VersionStatus(1, State.AVAILABLE), VersionStatus(2, State.LOADING)]
        return [VersionStatus(3, State.END)]


def _page(restarts: int | None) -> str:
    collector = GatewayCollector(
        GatewayMetrics(),
        lambda: server_families(_Models(), None if restarts is None else lambda: restarts),  # type: ignore[arg-type]
    )
    return generate_latest(registry_of(collector)).decode()


def test_each_version_is_one_series_labelled_with_its_state() -> None:
    page = _page(None)
    assert 'tensorgate_model_state{model_name="mlp",state="AVAILABLE",version="1"} 1.0' in page
    assert 'tensorgate_model_state{model_name="mlp",state="LOADING",version="2"} 1.0' in page
    assert 'tensorgate_model_state{model_name="resnet",state="END",version="3"} 1.0' in page
    assert 'model_name="gone"' not in page
    assert "tensorgate_frontend_restarts" not in page  # one process: no front ends to restart


def test_front_end_restarts_are_a_counter() -> None:
    assert "tensorgate_frontend_restarts_total 2.0" in _page(2)
