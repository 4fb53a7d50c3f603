"""The settings of the gateway's front door: where gRPC and REST listen, how many calls and
connections they admit and for how long, and who may call (bearer tokens, TLS).

One group of :class:`~gateway.config.settings.Settings` fields, each named after its flag and
documented in ``metadata["doc"]`` (:mod:`gateway.config.settings_field`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.config.machine import available_cpus
from gateway.config.settings_field import MIB, setting


def _default_grpc_max_threads() -> int:
    return 4 * available_cpus()


@dataclass(frozen=True)
class ListenSettings:
    """gRPC, REST, admission, connections, authentication and TLS."""

    # --- gRPC -------------------------------------------------------------------------------------
    port: int = setting(
        8500,
        "TCP port of the gRPC API (0..65535). 0 lets the OS choose a free port (reported on "
        "--ready_fd and in the log); TF Serving instead disables TCP gRPC with 0. Default 8500, as "
        "TF Serving.",
    )
    grpc_socket_path: str = setting(
        "",
        "If non-empty, also serve gRPC on this UNIX socket path (relative or absolute). "
        'Default "" (none), as TF Serving.',
    )
    grpc_bind_address: str = setting(
        "",
        "tensorgate: IP address the gRPC port listens on, e.g. 127.0.0.1 or ::1 for a sidecar "
        'reached only from its pod. Default "": every interface, IPv4 and IPv6, as TF Serving.',
    )
    grpc_channel_arguments: str = setting(
        "",
        "Comma-separated key=value gRPC server arguments, e.g. "
        "grpc.max_connection_age_ms=2000; values that parse as int32 are passed as ints, others "
        'as strings (TF Serving\'s rule). Default "".',
    )
    grpc_max_threads: int = field(
        default_factory=_default_grpc_max_threads,
        metadata={
            "doc": "Threads TF Serving's synchronous gRPC server may use (>= 1). tensorgate "
            "serves gRPC on one asyncio loop, so this bounds no thread pool; it is accepted so "
            "existing command lines keep working. Default 4 x available CPUs, as TF Serving.",
        },
    )
    max_message_bytes: int = setting(
        64 * MIB,
        "tensorgate: largest gRPC message received or sent, in bytes (1..2^31-1). TF Serving "
        "allows 2^31-1 (2 GiB); tensorgate defaults to 64 MiB (67108864) so a single request "
        "cannot pin gigabytes of memory. Raise it for large tensors.",
    )
    # --- REST -------------------------------------------------------------------------------------
    rest_api_port: int = setting(
        0,
        "TCP port of the HTTP/REST API (-1..65535); 0 disables REST. tensorgate: -1 lets the OS "
        "choose a free port (the same one on every address; reported on --ready_fd and in the "
        "log). Must differ from --port. Default 0, as TF Serving (its Docker image passes 8501).",
    )
    rest_api_bind_address: str = setting(
        "",
        "tensorgate: IP address the REST port listens on (see --grpc_bind_address). "
        'Default "": every interface, as TF Serving.',
    )
    rest_api_enable_tls: bool = setting(
        False,
        "tensorgate: serve REST over TLS with --ssl_config_file's key and certificate (and "
        "require client certificates when it sets client_verify). TF Serving's REST has no TLS. "
        "Default false.",
    )
    rest_api_timeout_in_ms: int = setting(
        30000,
        "Deadline of a REST call in milliseconds (>= 1); the REST counterpart of a gRPC deadline. "
        "Default 30000 (30 s), as TF Serving.",
    )
    rest_api_enable_cors_support: bool = setting(
        False,
        "Answer CORS preflight requests and add Access-Control-Allow-Origin: * to REST responses. "
        "Default false, as TF Serving.",
    )
    enable_api_docs: bool = setting(
        False,
        "tensorgate: describe the REST APIs on the REST port: OpenAPI 3.1 documents at "
        "/v1/docs/openapi.json (TF Serving's API) and /v2/docs/openapi.json (V2's), built from "
        "the models served, and Swagger UI pages at /v1/docs and /v2/docs (assets shipped with "
        "tensorgate). Default false.",
    )
    rest_api_max_body_bytes: int = setting(
        64 * MIB,
        "tensorgate: largest REST request body in bytes (1..2^31-1); a larger one gets 400 before "
        "it is parsed. TF Serving has no limit; 64 MiB (67108864) matches --max_message_bytes.",
    )
    rest_api_max_json_bytes: int = setting(
        16 * MIB,
        "tensorgate: largest JSON a REST request may carry, in bytes (1..2^31-1): a TF Serving "
        "/v1 body, or a V2 /v2 body's JSON part (the whole body, or its "
        "Inference-Header-Content-Length); a larger one gets 400 before it is parsed. Parsing "
        "JSON holds the front end's event loop (about 20 ms per MiB here), so this bounds how "
        "long one body can stall every other call and probe on it; send large tensors as raw "
        "bytes (V2's binary tensor extension, gRPC tensor_content) instead. Default 16 MiB "
        "(16777216): about a third of a second.",
    )
    # --- admission and connections ----------------------------------------------------------------
    max_concurrent_requests: int = setting(
        1024,
        "tensorgate: most Predict/Classify/Regress/MultiInference/GetModelMetadata calls (gRPC) "
        "and REST API calls (each surface on its own) running at once (>= 0); the next one is "
        "refused at once with UNAVAILABLE (REST 503 with Retry-After) rather than queued until "
        "its deadline. 0 = no bound. Default 1024.",
    )
    rest_api_max_connections: int = setting(
        1024,
        "tensorgate: most open REST connections (>= 1). A new connection past it takes the place "
        "of the one that has waited longest without a request in hand (which is closed: no "
        "answer is lost); only when every connection is serving a request is the new one "
        "answered 503 and closed. Default 1024.",
    )
    rest_api_header_timeout_seconds: float = setting(
        10.0,
        "tensorgate: seconds a REST connection may take to send a request's line and headers "
        "(> 0); a slower one is closed. Default 10.",
    )
    rest_api_body_timeout_seconds: float = setting(
        30.0,
        "tensorgate: seconds a REST request may take to send its body (> 0); a slower one gets "
        "408 and its connection is closed. Default 30.",
    )
    rest_api_idle_timeout_seconds: float = setting(
        75.0,
        "tensorgate: seconds an idle keep-alive REST connection stays open (> 0). Default 75.",
    )
    rest_api_write_timeout_seconds: float = setting(
        30.0,
        "tensorgate: seconds a REST client may leave its answer untaken (> 0): when no byte of "
        "what the server wrote has been read for this long, the connection is aborted and what "
        "it held is freed. Default 30.",
    )
    rest_api_max_header_bytes: int = setting(
        32 * 1024,
        "tensorgate: most bytes of one REST request's line and headers together (1024..2^31-1), "
        "counted as they arrive; a larger head gets 431 and its connection is closed (each line "
        "is also at most 8190 bytes, 128 headers at most). Default 32768, nginx's "
        "(large_client_header_buffers 4 8k).",
    )
    rest_api_max_connections_per_peer: int = setting(
        0,
        "tensorgate: most open REST connections from one IP address (>= 0); the next one from it "
        "gets 503 and is closed. 0 = no bound (the default: behind a proxy or load balancer "
        "every client shares its address).",
    )
    grpc_max_connections: int = setting(
        1024,
        "tensorgate: most open gRPC connections (>= 1; grpc.max_allowed_incoming_connections: "
        "grpc refuses a new connection past it, it cannot close an idle one instead). Default "
        "1024.",
    )
    grpc_max_concurrent_streams: int = setting(
        1024,
        "tensorgate: most calls one gRPC connection may have open at once (>= 1; HTTP/2's "
        "SETTINGS_MAX_CONCURRENT_STREAMS, grpc.max_concurrent_streams): with "
        "--grpc_max_connections, it bounds the calls whose answers a client may leave unread "
        "(an answer of 64 KiB or more also counts twice its size, the bytes grpc holds, "
        "against --max_inflight_bytes until it is sent). A call past it is refused at once "
        "(UNAVAILABLE): calls sent before the client has read the server's settings are not "
        "queued. Default 1024.",
    )
    grpc_idle_timeout_seconds: float = setting(
        300.0,
        "tensorgate: seconds an idle gRPC connection stays open before a graceful GOAWAY (> 0; "
        "grpc.max_connection_idle_ms; clients reconnect by themselves). A grpc.health.v1 Watch "
        "stream ends (OK) after as long, so that a connection holding only a watch goes idle "
        "too; watching clients call again. Default 300.",
    )
    grpc_max_pending_requests: int = setting(
        0,
        "tensorgate: most gRPC calls waiting in grpc's core for the server to take them "
        "(grpc.server.max_pending_requests; the hard limit is twice it). Past it grpc answers new "
        "calls at once without running Python, CANCELLED (grpcio 1.83.2, 1.85); the pinned grpcio "
        "1.78 does not apply it to HTTP/2 calls, so it has no effect there. Keep it above the "
        "calls clients hold in flight, or calls are cancelled under capacity. 0: grpc's 1000 and "
        "3000.",
    )
    # --- authentication and TLS -------------------------------------------------------------------
    auth_token_file: str = setting(
        "",
        "tensorgate: file of accepted bearer tokens, one per line (# comments allowed); when set, "
        "every call needs 'authorization: Bearer <token>' (gRPC metadata or HTTP header) except "
        "--auth_open_paths, else UNAUTHENTICATED / 401. Tokens are compared in constant time. "
        'Default "" (no authentication), as TF Serving.',
    )
    auth_admin_token_file: str = setting(
        "",
        "tensorgate: file of admin bearer tokens, one per line (# comments allowed), none of "
        "them in --auth_token_file. Only an admin token may change what is served "
        "(HandleReloadConfigRequest, V2 repository load and unload, with "
        "--enable_model_management_api): a serving token gets PERMISSION_DENIED / 403. Without "
        "it, those calls are refused whenever --auth_token_file is set, and open to every "
        "client when neither file is. An admin token is also accepted wherever a serving token "
        'is. Default "" (no admin token).',
    )
    auth_open_paths: str = setting(
        "/healthz,/readyz,/monitoring/prometheus/metrics,/grpc.health.v1.Health/",
        "tensorgate: comma-separated REST paths and gRPC method paths that need no token with "
        "--auth_token_file; an entry ending with / is a prefix. Default: the probes, the metrics "
        "page and grpc.health.v1.",
    )
    ssl_config_file: str = setting(
        "",
        "Text-format SSLConfig file (server_key, server_cert, custom_ca: PEM texts; "
        "client_verify); when set, gRPC listens with TLS, and requires client certificates "
        "signed by custom_ca when client_verify is true (mTLS). REST uses it with "
        '--rest_api_enable_tls. Default "" (plaintext), as TF Serving.',
    )
