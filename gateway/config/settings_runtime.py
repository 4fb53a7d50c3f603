"""The settings of the processes that run: worker processes and their threads, the
shutdown, the bounds on what one request and all of them may hold, logs and metrics.

One group of :class:`~gateway.config.settings.Settings` fields, each named after its flag and
documented in ``metadata["doc"]`` (:mod:`gateway.config.settings_field`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.config.settings_field import MIB, setting


@dataclass(frozen=True)
class RuntimeSettings:
    """Workers and threads, lifecycle, request limits and encoding, logs and metrics."""

    # --- runtime threads and workers --------------------------------------------------------------
    tensorflow_session_parallelism: int = setting(
        0,
        "Threads for both the intra-op and inter-op pools of each worker's runtime (>= 0), used "
        "only when both per-pool flags are 0; 0 = auto. Default 0, as TF Serving.",
    )
    tensorflow_intra_op_parallelism: int = setting(
        0,
        "Threads one operator may use inside a worker (>= 0); 0 = auto (see --workers). "
        "Default 0, as TF Serving.",
    )
    tensorflow_inter_op_parallelism: int = setting(
        0,
        "Operators a worker may run at once (>= 0); 0 = auto, which is 1 (sequential execution): "
        "workers already run in parallel. Default 0, as TF Serving.",
    )
    workers: int = setting(
        0,
        "tensorgate: worker processes running models (>= 0). 0 = auto: derived from the "
        "available CPUs and --tensorflow_intra_op_parallelism so that workers x intra-op threads "
        "never exceeds the CPUs. Default 0.",
    )
    frontends: int = setting(
        0,
        "tensorgate: front-end processes (>= 0), each with its own event loop, gRPC and REST "
        "servers on the same ports (SO_REUSEPORT spreads connections, not requests, over them) "
        "and batch queues, sharing the workers; 1 = one process serving everything. 0 = auto: "
        "one per CPU, at most 8 and at most 64 // --workers (each front end has its own "
        "shared-memory channel to each worker), and 1 on one CPU. Default 0.",
    )
    worker_arena_mb: int = setting(
        64,
        "tensorgate: shared memory per worker for batch inputs, and the same again for outputs, "
        "in MiB (>= 1), for each front end (and once more for the supervisor's warmup runs "
        "when there are several). A batch larger than this cannot be placed. Default 64.",
    )
    worker_ping_interval_seconds: float = setting(
        5.0,
        "tensorgate: seconds between liveness pings to each worker (> 0). Default 5.",
    )
    worker_ping_timeout_seconds: float = setting(
        30.0,
        "tensorgate: seconds a worker may take to answer a ping (> 0) before it is killed and "
        "respawned with its models; longer than any single batch should run. Default 30.",
    )
    inline_runs: str = setting(
        "auto",
        "tensorgate: where light models run. auto: an ONNX version whose measured run costs "
        "less than the round trip to a worker (and whose model file fits --inline_budget_mb) "
        "runs inside each front end, the calls of one event-loop turn as one batch, never "
        "holding the loop more than 1 ms per batch; it moves to the workers if its runs turn "
        "slow. always: every ONNX version that loads runs in the front ends (same bound). "
        "never: every run goes to the worker processes. TensorFlow models always run on the "
        "workers, which hold every version in any case. Default auto.",
    )
    inline_budget_mb: int = setting(
        64,
        "tensorgate: MiB (>= 0) each front end may spend on the versions it runs itself "
        "(--inline_runs): each version's whole directory, external weights included, plus the "
        "memory its session took when loaded. Default 64.",
    )
    frontend_ping_interval_seconds: float = setting(
        5.0,
        "tensorgate: with several front ends, seconds between the supervisor's liveness pings "
        "to each front end (> 0). Default 5.",
    )
    frontend_ping_timeout_seconds: float = setting(
        10.0,
        "tensorgate: seconds a front end may take to answer a ping (> 0) before it counts as "
        "dead: it is SIGKILLed (its connections fail) and replaced. A stopped or hung front end "
        "is thus replaced within --frontend_ping_interval_seconds + this, and no reload, unload "
        "or registry push waits on it longer. Default 10.",
    )
    # --- lifecycle --------------------------------------------------------------------------------
    shutdown_grace_seconds: float = setting(
        10.0,
        "tensorgate: on SIGTERM/SIGINT, seconds in-flight RPCs may take to finish (>= 0) while "
        "new ones are refused with UNAVAILABLE (REST 503) and the listeners stay open; then the "
        "rest are cancelled and the workers stop (a second signal skips the wait). Keep it below "
        "Kubernetes' terminationGracePeriodSeconds (30 by default) minus any preStop delay. "
        "Default 10.",
    )
    ready_fd: int = setting(
        -1,
        "tensorgate: an inherited file descriptor (>= 0) to which one JSON line "
        '{"pid": ..., "grpc_port": ...} is written once the gateway serves, then closed; for '
        "supervisors and tests that must not poll. Default -1 (none).",
    )
    # --- request limits and encoding --------------------------------------------------------------
    max_tensor_elements: int = setting(
        2**24,
        "tensorgate: most elements one request tensor's shape may declare (>= 1), checked before "
        "anything is allocated: typed values repeat to fill a shape, so a tiny message could "
        "otherwise demand gigabytes. Default 16777216 (2^24: 64 MiB of float32, the default "
        "--max_message_bytes).",
    )
    max_request_bytes: int = setting(
        64 * MIB,
        "tensorgate: most bytes one request's input tensors may take once decoded (>= 1), "
        "computed from the declared shapes before anything is expanded; a larger request gets "
        "RESOURCE_EXHAUSTED. Default 64 MiB (67108864), the default --max_message_bytes: what a "
        "request could carry as raw tensor_content anyway.",
    )
    max_inflight_bytes: int = setting(
        512 * MIB,
        "tensorgate: most bytes of decoded input tensors all in-flight requests may hold at once "
        "(>= 1); a request that would pass it gets RESOURCE_EXHAUSTED (retryable) instead of "
        "growing the gateway's memory. Default 512 MiB (536870912): eight requests of the "
        "default --max_request_bytes.",
    )
    max_image_pixels: int = setting(
        1 << 25,
        "tensorgate: most pixels (width x height) one encoded image given to an image input may "
        "declare (1..89478485, Pillow's own bound), read from its header before anything is "
        "decoded; a larger one (a decompression bomb) gets INVALID_ARGUMENT. Default 33554432 "
        "(2^25: 8192 x 4096, 96 MiB of RGB while it decodes).",
    )
    max_images_per_request: int = setting(
        256,
        "tensorgate: most encoded images one request may give its image inputs (>= 1); more get "
        "INVALID_ARGUMENT. The tensors they decode into count against --max_request_bytes. "
        "Default 256.",
    )
    image_decode_threads: int = setting(
        0,
        "tensorgate: threads each front end decodes encoded images with (>= 0), off its event "
        "loop; a request's images are one job. 0 = auto: the CPUs divided among the front ends "
        "(at least 1). Default 0.",
    )
    enable_serialization_as_tensor_content: bool = setting(
        False,
        "Encode Predict outputs as packed tensor_content instead of typed value fields. "
        "Default false, as TF Serving.",
    )
    # --- logs and metrics -------------------------------------------------------------------------
    log_format: str = setting(
        "text",
        "tensorgate: format of the gateway's and the workers' log lines on stderr: text (one "
        "line: time, level, pid, process, logger, message) or json (one object per line, with "
        'trace_id and span_id inside traced requests). Default "text".',
    )
    monitoring_config_file: str = setting(
        "",
        "Text-format MonitoringConfig file; prometheus_config { enable: true } serves TF "
        "Serving's metrics (and tensorgate's own) on the REST port at prometheus_config.path "
        '(default /monitoring/prometheus/metrics). Default "" (no metrics page), as TF Serving.',
    )
    enable_server_timing: bool = setting(
        False,
        "tensorgate: every answer carries where its time went as W3C Server-Timing (REST header "
        "Server-Timing, gRPC trailing metadata server-timing): queue;dur, rows;desc (its own), "
        "compute;dur, total;dur, durations in milliseconds (docs/metrics.md). Default "
        "false: no hook does any work for it.",
    )
    request_log_max_pending: int = setting(
        1024,
        "tensorgate: request logging (a model's logging_config): records waiting for their "
        "file's writer, per filename_prefix and process (>= 1); a sampled call past it is not "
        "logged (tensorgate_request_log_dropped_total) and is answered as usual. Default 1024.",
    )
    request_log_max_pending_bytes: int = setting(
        64 * MIB,
        "tensorgate: request logging: bytes the records waiting for their writers may hold, all "
        "prefixes of one process together (>= 1; a record holds about its request's and its "
        "response's tensors; a record alone may pass it); past it a sampled call is not logged, "
        "as past --request_log_max_pending. A writer that cannot write (a hung mount) thus "
        "never holds more; the process may hold this beside --max_inflight_bytes. Default 64 "
        "MiB (67108864).",
    )
    request_log_max_file_bytes: int = setting(
        256 * MIB,
        "tensorgate: request logging: bytes at which a log file is closed and the next one "
        "started (>= 1; a file holds at least one record). Default 256 MiB (268435456).",
    )
    request_log_max_total_bytes: int = setting(
        4096 * MIB,
        "tensorgate: request logging: most bytes one filename_prefix's files may take, every "
        "process's together (0: no cap; else >= --request_log_max_file_bytes); before a file "
        "is started the oldest are removed until they and one full file fit. Default 4 GiB "
        "(4294967296).",
    )
