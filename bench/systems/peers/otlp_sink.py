"""An OTLP/HTTP trace sink for the tracing scenario: accepts ``POST /v1/traces`` (protobuf),
counts the spans and drops them; ``GET /stats`` answers ``{"requests": n, "spans": n}``. Usage::

    python -m bench.systems.peers.otlp_sink --ready_fd=N

writes ``{"pid": ..., "port": ...}`` to fd N when serving (127.0.0.1, OS-chosen port); stops on
SIGTERM. It runs on the load generator's CPU, so exporting costs the server only its own side.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

_lock = threading.Lock()
_counts = {"requests": 0, "spans": 0}
_EMPTY = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    """Connections stay open between exports, as an OpenTelemetry Collector keeps them."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        with _lock:
            _counts["requests"] += 1
            _counts["spans"] += spans
        self._reply(_EMPTY, "application/x-protobuf")

    def do_GET(self) -> None:
        with _lock:
            body = json.dumps(_counts).encode()
        self._reply(body, "application/json")

    def _reply(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: one line per export would be noise."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ready_fd", type=int, default=-1)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    if args.ready_fd >= 0:
        with os.fdopen(args.ready_fd, "w") as out:
            out.write(json.dumps({"pid": os.getpid(), "port": server.server_address[1]}) + "\n")
    server.serve_forever()


if __name__ == "__main__":
    main()
