"""A minimal OTLP trace receiver for tests, on both OTLP transports: gRPC
(``opentelemetry.proto.collector.trace.v1.TraceService/Export``) and HTTP/protobuf
(``POST /v1/traces``), on loopback ports; it keeps every span it is sent with its resource."""

from __future__ import annotations

import contextlib
import gzip
import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


@dataclass
class Received:
    """One span as received: its resource's attributes, scope name and the span itself."""

    resource: dict[str, Any]
    scope: str
    span: trace_pb2.Span

    @property
    def trace_id(self) -> str:
        return self.span.trace_id.hex()

    @property
    def attributes(self) -> dict[str, Any]:
        return _attributes(self.span.attributes)


def _value(value: common_pb2.AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


@dataclass
class Receiver:
    """What both endpoints have received so far (thread-safe)."""

    spans: list[Received] = field(default_factory=list)
    transports: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    grpc_port: int = 0
    http_port: int = 0

    def add(self, request: trace_service_pb2.ExportTraceServiceRequest, transport: str) -> None:
        received = [
            Received(_attributes(rs.resource.attributes), ss.scope.name, span)
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]
        with self.lock:
            self.spans.extend(received)
            self.transports.add(transport)

    def endpoint(self, protocol: str) -> str:
        port = self.grpc_port if protocol == "grpc" else self.http_port
        return f"http://127.0.0.1:{port}"


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: object
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self.receiver.add(request, "grpc")
        return trace_service_pb2.ExportTraceServiceResponse()


def _http_handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            receiver.add(request, "http/protobuf")
            reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads what was received, not the access log."""

    return Handler


@contextlib.contextmanager
def running_receiver() -> Iterator[Receiver]:
    """Both endpoints, on OS-chosen loopback ports, until the block ends."""
    receiver = Receiver()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(receiver), server)
    receiver.grpc_port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    http = ThreadingHTTPServer(("127.0.0.1", 0), _http_handler(receiver))
    receiver.http_port = http.server_address[1]
    thread = threading.Thread(target=http.serve_forever, name="otlp-http", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        http.shutdown()
        http.server_close()
        thread.join(30)
        server.stop(0).wait(30)
