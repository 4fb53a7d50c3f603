"""The one typed settings object of the gateway, fed by tensorflow_model_server's flags.

Every field is named after its command-line flag (``--port`` → :attr:`Settings.port`) and carries
its unit, default and reason in ``dataclasses.fields(Settings)[i].metadata["doc"]`` (also the
``--help`` text). TF Serving's defaults are kept unless the field says otherwise. Validation
(:mod:`gateway.config.validation`) runs on construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.config.model_workers import parse_model_workers
from gateway.config.platform import available_cpus
from gateway.config.validation import parse_grpc_channel_arguments, validate

MIB = 1024 * 1024


def _setting(default: Any, doc: str) -> Any:
    """A dataclass field with a fixed default and its documentation (unit, default, reason)."""
    return field(default=default, metadata={"doc": doc})


def _default_grpc_max_threads() -> int:
    return 4 * available_cpus()


@dataclass(frozen=True)
class Settings:
    """Everything the gateway is configured with; immutable, validated on construction.

    Build it with :func:`gateway.config.flags.parse_flags` from a command line, or directly in tests
    (``Settings(model_base_path="/models/m")``). Either ``model_base_path`` or
    ``model_config_file`` is required, as in TF Serving.
    """

    # --- gRPC ---------------------------------------------------------------------------------
    port: int = _setting(
        8500,
        "TCP port of the gRPC API (0..65535). 0 lets the OS choose a free port (reported on "
        "--ready_fd and in the log); TF Serving instead disables TCP gRPC with 0. Default 8500, as "
        "TF Serving.",
    )
    grpc_socket_path: str = _setting(
        "",
        "If non-empty, also serve gRPC on this UNIX socket path (relative or absolute). "
        'Default "" (none), as TF Serving.',
    )
    grpc_bind_address: str = _setting(
        "",
        "tensorgate: IP address the gRPC port listens on, e.g. 127.0.0.1 or ::1 for a sidecar "
        'reached only from its pod. Default "": every interface, IPv4 and IPv6, as TF Serving.',
    )
    grpc_channel_arguments: str = _setting(
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
    max_message_bytes: int = _setting(
        64 * MIB,
        "tensorgate: largest gRPC message received or sent, in bytes (1..2^31-1). TF Serving "
        "allows 2^31-1 (2 GiB); tensorgate defaults to 64 MiB (67108864) so a single request "
        "cannot pin gigabytes of memory. Raise it for large tensors.",
    )
    # --- REST ---------------------------------------------------------------------------------
    rest_api_port: int = _setting(
        0,
        "TCP port of the HTTP/REST API (0..65535); 0 disables REST. Must differ from --port. "
        "Default 0, as TF Serving (its Docker image passes 8501).",
    )
    rest_api_bind_address: str = _setting(
        "",
        "tensorgate: IP address the REST port listens on (see --grpc_bind_address). "
        'Default "": every interface, as TF Serving.',
    )
    rest_api_enable_tls: bool = _setting(
        False,
        "tensorgate: serve REST over TLS with --ssl_config_file's key and certificate (and "
        "require client certificates when it sets client_verify). TF Serving's REST has no TLS. "
        "Default false.",
    )
    rest_api_timeout_in_ms: int = _setting(
        30000,
        "Deadline of a REST call in milliseconds (>= 1); the REST counterpart of a gRPC deadline. "
        "Default 30000 (30 s), as TF Serving.",
    )
    rest_api_enable_cors_support: bool = _setting(
        False,
        "Answer CORS preflight requests and add Access-Control-Allow-Origin: * to REST responses. "
        "Default false, as TF Serving.",
    )
    rest_api_max_body_bytes: int = _setting(
        64 * MIB,
        "tensorgate: largest REST request body in bytes (1..2^31-1); a larger one gets 400 before "
        "it is parsed. TF Serving has no limit; 64 MiB (67108864) matches --max_message_bytes.",
    )
    # --- models -------------------------------------------------------------------------------
    model_name: str = _setting(
        "default",
        'Name of the single model served from --model_base_path. Default "default", as TF '
        "Serving. Ignored when --model_config_file is set.",
    )
    model_base_path: str = _setting(
        "",
        "Directory holding <version>/ subdirectories of the single model. Required unless "
        '--model_config_file is set. Default "".',
    )
    model_config_file: str = _setting(
        "",
        "Text-format ModelServerConfig file listing the models to serve (several models, version "
        "policies, labels). When set, --model_name and --model_base_path are ignored. "
        'Default "".',
    )
    model_config_file_poll_wait_seconds: int = _setting(
        0,
        "Seconds between re-reads of --model_config_file (>= 0); 0 reads it once at start. A "
        "changed file is applied like HandleReloadConfigRequest (models added, changed, "
        "removed); an unreadable or invalid one is logged and the running config stays. "
        "Default 0, as TF Serving.",
    )
    enable_model_management_api: bool = _setting(
        False,
        "tensorgate: answer ModelService.HandleReloadConfigRequest, which lets any client "
        "replace the served models. Off by default (the RPC answers UNIMPLEMENTED) because a "
        "model server must not let every client rewrite it; TF Serving has no such switch and "
        "always answers it.",
    )
    allow_version_labels_for_unavailable_models: bool = _setting(
        False,
        "Let a config assign a version label that is not in use yet to a version that is not "
        "available (not loaded yet). Without it, as with it for a label already in use, a label "
        'must point at an AVAILABLE version, else the config is refused ("Request to assign '
        'label to version N of model M, which is not currently available for inference"): a '
        "config with labels needs this flag at start. Default false, as TF Serving.",
    )
    max_num_load_retries: int = _setting(
        5,
        "Times a failed model version load is retried (>= 0) before the version is given up "
        "(state END with its error); 0 tries once. Retries stop when a new config drops the "
        "model. Default 5, as TF Serving.",
    )
    load_retry_interval_micros: int = _setting(
        60_000_000,
        "Microseconds between load retries; negative means no wait. Default 60000000 (1 minute), "
        "as TF Serving.",
    )
    model_workers: str = _setting(
        "",
        "tensorgate: how many worker processes host each model, as comma-separated name=N "
        "(*=N for every model not named), e.g. resnet=1,*=2; a model version is loaded, warmed "
        "up and served on its N least busy workers only (a TensorFlow model costs hundreds of "
        'MB per worker). Default "": every model on every worker.',
    )
    file_system_poll_wait_seconds: int = _setting(
        1,
        "Seconds between scans of model base paths for new versions (>= 0); 0 scans once at "
        "start. Default 1, as TF Serving (its negative 'testing only' values are refused).",
    )
    saved_model_tags: str = _setting(
        "serve",
        "Comma-separated tags of the MetaGraphDef loaded from a TensorFlow SavedModel; unused "
        'for ONNX models. Default "serve", as TF Serving.',
    )
    enable_model_warmup: bool = _setting(
        True,
        "Before a version takes traffic, replay its assets.extra/tf_serving_warmup_requests "
        "(TFRecord of PredictionLog: predict, classify, regress, multi_inference; at most 1000) "
        "on every worker that hosts it, for TensorFlow and ONNX models alike; a corrupt or "
        "mismatched record fails the load. With --enable_batching, also one run of each "
        "allowed_batch_sizes where the signature's shapes allow. Default true, as TF Serving.",
    )
    num_request_iterations_for_warmup: int = _setting(
        0,
        "Times each warmup record is replayed (>= 0); 0 means once. Default 0, as TF Serving.",
    )
    enable_signature_method_name_check: bool = _setting(
        False,
        "Require the signatures used by Classify/Regress/MultiInference to carry the matching "
        "method_name (tensorflow/serving/classify, ...). Default false, as TF Serving.",
    )
    # --- batching -----------------------------------------------------------------------------
    enable_batching: bool = _setting(
        False,
        "Batch requests per (model, version, signature) with BatchingParameters. Default false, "
        "as TF Serving.",
    )
    batching_parameters_file: str = _setting(
        "",
        "Text-format BatchingParameters file overriding the batching defaults; needs "
        '--enable_batching. Default "" (TF Serving\'s defaults).',
    )
    enable_per_model_batching_parameters: bool = _setting(
        False,
        "Read batching parameters from each model version's batching_params.pbtxt instead of "
        "--batching_parameters_file; only with --enable_batching. Default false, as TF Serving.",
    )
    # --- runtime threads and workers ----------------------------------------------------------
    tensorflow_session_parallelism: int = _setting(
        0,
        "Threads for both the intra-op and inter-op pools of each worker's runtime (>= 0), used "
        "only when both per-pool flags are 0; 0 = auto. Default 0, as TF Serving.",
    )
    tensorflow_intra_op_parallelism: int = _setting(
        0,
        "Threads one operator may use inside a worker (>= 0); 0 = auto (see --workers). "
        "Default 0, as TF Serving.",
    )
    tensorflow_inter_op_parallelism: int = _setting(
        0,
        "Operators a worker may run at once (>= 0); 0 = auto, which is 1 (sequential execution): "
        "workers already run in parallel. Default 0, as TF Serving.",
    )
    workers: int = _setting(
        0,
        "tensorgate: worker processes running models (>= 0). 0 = auto: derived from the "
        "available CPUs and --tensorflow_intra_op_parallelism so that workers x intra-op threads "
        "never exceeds the CPUs. Default 0.",
    )
    worker_arena_mb: int = _setting(
        64,
        "tensorgate: shared memory per worker for batch inputs, and the same again for outputs, "
        "in MiB (>= 1). A batch larger than this cannot be placed. Default 64.",
    )
    worker_ping_interval_seconds: float = _setting(
        5.0,
        "tensorgate: seconds between liveness pings to each worker (> 0). Default 5.",
    )
    worker_ping_timeout_seconds: float = _setting(
        30.0,
        "tensorgate: seconds a worker may take to answer a ping (> 0) before it is killed and "
        "respawned with its models; longer than any single batch should run. Default 30.",
    )
    # --- lifecycle -----------------------------------------------------------------------------
    shutdown_grace_seconds: float = _setting(
        10.0,
        "tensorgate: on SIGTERM/SIGINT, seconds in-flight RPCs may take to finish (>= 0) while "
        "new ones are refused with UNAVAILABLE (REST 503) and the listeners stay open; then the "
        "rest are cancelled and the workers stop (a second signal skips the wait). Keep it below "
        "Kubernetes' terminationGracePeriodSeconds (30 by default) minus any preStop delay. "
        "Default 10.",
    )
    ready_fd: int = _setting(
        -1,
        "tensorgate: an inherited file descriptor (>= 0) to which one JSON line "
        '{"pid": ..., "grpc_port": ...} is written once the gateway serves, then closed; for '
        "supervisors and tests that must not poll. Default -1 (none).",
    )
    # --- request limits and encoding ----------------------------------------------------------
    max_tensor_elements: int = _setting(
        2**24,
        "tensorgate: most elements one request tensor's shape may declare (>= 1), checked before "
        "anything is allocated: typed values repeat to fill a shape, so a tiny message could "
        "otherwise demand gigabytes. Default 16777216 (2^24: 64 MiB of float32, the default "
        "--max_message_bytes).",
    )
    max_request_bytes: int = _setting(
        64 * MIB,
        "tensorgate: most bytes one request's input tensors may take once decoded (>= 1), "
        "computed from the declared shapes before anything is expanded; a larger request gets "
        "RESOURCE_EXHAUSTED. Default 64 MiB (67108864), the default --max_message_bytes: what a "
        "request could carry as raw tensor_content anyway.",
    )
    max_inflight_bytes: int = _setting(
        512 * MIB,
        "tensorgate: most bytes of decoded input tensors all in-flight requests may hold at once "
        "(>= 1); a request that would pass it gets RESOURCE_EXHAUSTED (retryable) instead of "
        "growing the gateway's memory. Default 512 MiB (536870912): eight requests of the "
        "default --max_request_bytes.",
    )
    enable_serialization_as_tensor_content: bool = _setting(
        False,
        "Encode Predict outputs as packed tensor_content instead of typed value fields. "
        "Default false, as TF Serving.",
    )
    # --- admission, connections and authentication ---------------------------------------------
    max_concurrent_requests: int = _setting(
        1024,
        "tensorgate: most Predict/Classify/Regress/MultiInference/GetModelMetadata calls (gRPC) "
        "and REST API calls (each surface on its own) running at once (>= 0); the next one is "
        "refused at once with UNAVAILABLE (REST 503 with Retry-After) rather than queued until "
        "its deadline. 0 = no bound. Default 1024.",
    )
    max_queue_delay_ms: int = _setting(
        0,
        "tensorgate: latency target of the batch queues in milliseconds (>= 0): a request that "
        "would wait longer than this for its batch to start (predicted from the measured batch "
        "time) is refused at once with UNAVAILABLE, so accepted requests keep their latency under "
        "overload. 0 = only the request's deadline limits the wait, as TF Serving. Default 0.",
    )
    rest_api_max_connections: int = _setting(
        1024,
        "tensorgate: most open REST connections (>= 1); a connection past it is closed at once. "
        "Default 1024.",
    )
    rest_api_header_timeout_seconds: float = _setting(
        10.0,
        "tensorgate: seconds a REST connection may take to send a request's line and headers "
        "(> 0); a slower one is closed. Default 10.",
    )
    rest_api_body_timeout_seconds: float = _setting(
        30.0,
        "tensorgate: seconds a REST request may take to send its body (> 0); a slower one gets "
        "408 and its connection is closed. Default 30.",
    )
    rest_api_idle_timeout_seconds: float = _setting(
        75.0,
        "tensorgate: seconds an idle keep-alive REST connection stays open (> 0). Default 75.",
    )
    grpc_max_connections: int = _setting(
        1024,
        "tensorgate: most open gRPC connections (>= 1; grpc.max_allowed_incoming_connections). "
        "Default 1024.",
    )
    grpc_idle_timeout_seconds: float = _setting(
        300.0,
        "tensorgate: seconds an idle gRPC connection stays open before a graceful GOAWAY (> 0; "
        "grpc.max_connection_idle_ms; clients reconnect by themselves). Default 300.",
    )
    grpc_max_pending_requests: int = _setting(
        0,
        "tensorgate: most gRPC calls waiting in grpc's core for the server to take them "
        "(grpc.server.max_pending_requests; the hard limit is twice it). Past it grpc answers new "
        "calls at once without running Python (grpcio 1.85: CANCELLED). Keep it above the calls "
        "clients hold in flight, or calls are cancelled under capacity. 0: grpc's 1000 and 3000.",
    )
    auth_token_file: str = _setting(
        "",
        "tensorgate: file of accepted bearer tokens, one per line (# comments allowed); when set, "
        "every call needs 'authorization: Bearer <token>' (gRPC metadata or HTTP header) except "
        "--auth_open_paths, else UNAUTHENTICATED / 401. Tokens are compared in constant time. "
        'Default "" (no authentication), as TF Serving.',
    )
    auth_open_paths: str = _setting(
        "/healthz,/readyz,/monitoring/prometheus/metrics,/grpc.health.v1.Health/",
        "tensorgate: comma-separated REST paths and gRPC method paths that need no token with "
        "--auth_token_file; an entry ending with / is a prefix. Default: the probes, the metrics "
        "page and grpc.health.v1.",
    )
    # --- other config files -------------------------------------------------------------------
    monitoring_config_file: str = _setting(
        "",
        "Text-format MonitoringConfig file; prometheus_config { enable: true } serves TF "
        "Serving's metrics (and tensorgate's own) on the REST port at prometheus_config.path "
        '(default /monitoring/prometheus/metrics). Default "" (no metrics page), as TF Serving.',
    )
    log_format: str = _setting(
        "text",
        "tensorgate: format of the gateway's and the workers' log lines on stderr: text (one "
        "line: time, level, pid, process, logger, message) or json (one object per line, with "
        'trace_id and span_id inside traced requests). Default "text".',
    )
    ssl_config_file: str = _setting(
        "",
        "Text-format SSLConfig file (server_key, server_cert, custom_ca: PEM texts; "
        "client_verify); when set, gRPC listens with TLS, and requires client certificates "
        "signed by custom_ca when client_verify is true (mTLS). REST uses it with "
        '--rest_api_enable_tls. Default "" (plaintext), as TF Serving.',
    )

    def __post_init__(self) -> None:
        validate(self)

    @property
    def grpc_channel_options(self) -> tuple[tuple[str, int | str], ...]:
        """``grpc_channel_arguments`` as gRPC server options, in order."""
        return parse_grpc_channel_arguments(self.grpc_channel_arguments)

    @property
    def model_worker_counts(self) -> Mapping[str, int]:
        """``model_workers`` parsed: model name (or ``*``) → worker count."""
        return parse_model_workers(self.model_workers)

    @property
    def saved_model_tag_set(self) -> frozenset[str]:
        """``saved_model_tags`` split on commas."""
        return frozenset(tag.strip() for tag in self.saved_model_tags.split(","))

    @property
    def worker_arena_bytes(self) -> int:
        """``worker_arena_mb`` in bytes (the size of each of a worker's input and output areas)."""
        return self.worker_arena_mb * MIB
