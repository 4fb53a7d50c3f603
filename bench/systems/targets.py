"""What the harness knows of a system under test: its spec, how to send it one request, its process.

- :class:`SystemSpec`: one configuration of one system (``kind`` + parameters) under a name;
- :class:`Target`: the transport, address, method and request bytes the load generators send;
- :class:`Running`: a started system (its :class:`~bench.systems.procs.Server`) and its target;
- :class:`Context`: where models and logs are, and a cache of request payloads (some are built by
  a peer's own client library in its own virtualenv, once per run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.load import h2load
from bench.systems.models import model_path, sample_input
from bench.systems.procs import Server


@dataclass(frozen=True)
class Target:
    """How to send one request of the benchmark's payload to a running system."""

    transport: str
    """``grpc`` or ``http``."""
    address: str
    """gRPC ``host:port`` or HTTP base URL."""
    method: str
    payload: bytes
    """What the load generators send (gRPC message or HTTP body)."""
    content_type: str = "application/octet-stream"
    """HTTP only: the body's media type."""
    headers: tuple[tuple[str, str], ...] = ()
    """HTTP only: further request headers (name, value)."""

    @property
    def url(self) -> str:
        base = self.address if self.transport == "http" else f"http://{self.address}"
        return base + self.method

    @property
    def h2_body(self) -> bytes:
        return h2load.grpc_frame(self.payload) if self.transport == "grpc" else self.payload

    @property
    def http_headers(self) -> tuple[tuple[str, str], ...]:
        """Every header an HTTP request carries (content type first); none for gRPC."""
        if self.transport != "http":
            return ()
        return (("content-type", self.content_type), *self.headers)

    @property
    def h2load_headers(self) -> tuple[str, ...]:
        """h2load's ``-H`` values: gRPC's, or every HTTP header."""
        if self.transport == "grpc":
            return h2load.GRPC_HEADERS
        return tuple(f"{k}: {v}" for k, v in self.http_headers)


@dataclass(frozen=True)
class SystemSpec:
    """One configuration of one system (``kind`` + parameters) under a display ``name``."""

    name: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Running:
    spec: SystemSpec
    server: Server
    target: Target
    metrics_url: str | None = None
    """tensorgate's Prometheus page when started with ``metrics`` on."""

    def stop(self) -> None:
        self.server.stop()


@dataclass
class Context:
    """Where models, logs and peer interpreters are; caches request payloads per key."""

    models_root: Path
    logs: Path
    batch: int = 1
    _payloads: dict[tuple[str, ...], bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.models_root = self.models_root.resolve()  # servers run in other directories

    def model_file(self, model: str) -> Path:
        return model_path(self.models_root, model)

    def model_dir(self, model: str) -> Path:
        """The TF Serving base path (``<root>/<model>``, holding version directories)."""
        return self.model_file(model).parent.parent

    def raw_input(self, model: str) -> bytes:
        return sample_input(model, self.batch).tobytes()

    def payload(self, key: tuple[str, ...], build: Callable[[], bytes]) -> bytes:
        """The payload cached under ``key``, built by ``build()`` the first time."""
        if key not in self._payloads:
            self._payloads[key] = build()
        return self._payloads[key]

    def log_path(self, spec: SystemSpec, model: str) -> Path:
        return self.logs / f"{spec.name}-{model}.log"
