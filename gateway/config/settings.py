"""The one typed settings object of the gateway, fed by tensorflow_model_server's flags.

Every field is named after its command-line flag (``--port`` → :attr:`Settings.port`) and carries
its unit, default and reason in ``dataclasses.fields(Settings)[i].metadata["doc"]`` (also the
``--help`` text). TF Serving's defaults are kept unless the field says otherwise. All validation
happens in :meth:`Settings.__post_init__`: a :class:`SettingsError` names the field, the rule and
the value, e.g. ``port must be in 0..65535, got 70000``.

:func:`resolve_worker_threads` turns ``workers`` and the TensorFlow parallelism flags into the
worker count and per-worker thread counts; :func:`available_cpus` is the CPU budget it divides.
"""

from __future__ import annotations

import logging
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

INT32_MAX = 2**31 - 1
MIB = 1024 * 1024


class SettingsError(ValueError):
    """A setting is out of range or contradicts another one; the message says which and why."""


def available_cpus(
    *, cgroup_root: str | Path = "/sys/fs/cgroup", proc_cgroup: str | Path = "/proc/self/cgroup"
) -> int:
    """CPUs this process may keep busy: its affinity mask, lowered by a cgroup CPU quota.

    The quota (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``; this is how
    Kubernetes CPU limits arrive) counts as ``floor(quota / period)`` CPUs, at least 1: rounding
    up would let the workers together ask for more CPU time than the limit grants.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    quota = _cgroup_cpu_quota(Path(cgroup_root), Path(proc_cgroup))
    if quota is not None:
        cpus = min(cpus, max(1, math.floor(quota)))
    return max(1, cpus)


def _cgroup_cpu_quota(root: Path, proc_cgroup: Path) -> float | None:
    """The CPU quota in CPUs of this process's cgroup, or None when unlimited or unreadable."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        lines = []
    candidates: list[tuple[Path, Path | None]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        rel = rel.lstrip("/")
        if controllers == "":
            candidates.append((root / rel / "cpu.max", None))
        elif "cpu" in controllers.split(","):
            base = root / "cpu" / rel
            candidates.append((base / "cpu.cfs_quota_us", base / "cpu.cfs_period_us"))
    candidates.append((root / "cpu.max", None))
    candidates.append((root / "cpu" / "cpu.cfs_quota_us", root / "cpu" / "cpu.cfs_period_us"))
    for quota_file, period_file in candidates:
        try:
            if period_file is None:
                quota_text, _, period_text = quota_file.read_text().strip().partition(" ")
            else:
                quota_text = quota_file.read_text().strip()
                period_text = period_file.read_text().strip()
        except OSError:
            continue
        if quota_text == "max" or quota_text.startswith("-"):
            return None
        try:
            quota, period = int(quota_text), int(period_text or "100000")
        except ValueError:
            continue
        if quota > 0 and period > 0:
            return quota / period
        return None
    return None


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
        "Seconds between re-reads of --model_config_file (>= 0); 0 reads it once at start. "
        "Default 0, as TF Serving.",
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
        "Replay assets.extra/tf_serving_warmup_requests (and each allowed batch size) before a "
        "version takes traffic, so the first requests are not slow. Default true, as TF Serving.",
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
        "tensorgate: on SIGTERM/SIGINT, seconds in-flight RPCs may take to finish (>= 0) before "
        "they are cancelled and the workers stop; keep it below Kubernetes' "
        "terminationGracePeriodSeconds (30 by default) minus any preStop delay. Default 10.",
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
    enable_serialization_as_tensor_content: bool = _setting(
        False,
        "Encode Predict outputs as packed tensor_content instead of typed value fields. "
        "Default false, as TF Serving.",
    )
    # --- other config files -------------------------------------------------------------------
    monitoring_config_file: str = _setting(
        "",
        "Text-format MonitoringConfig file; its prometheus_config turns on the Prometheus "
        'endpoint on the REST port. Default "" (no metrics endpoint), as TF Serving.',
    )
    ssl_config_file: str = _setting(
        "",
        "Text-format SSLConfig file; when set, gRPC listens with TLS (mTLS if client_verify). "
        'Default "" (plaintext), as TF Serving.',
    )

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def grpc_channel_options(self) -> tuple[tuple[str, int | str], ...]:
        """``grpc_channel_arguments`` as gRPC server options, in order."""
        return parse_grpc_channel_arguments(self.grpc_channel_arguments)

    @property
    def saved_model_tag_set(self) -> frozenset[str]:
        """``saved_model_tags`` split on commas."""
        return frozenset(tag.strip() for tag in self.saved_model_tags.split(","))

    @property
    def worker_arena_bytes(self) -> int:
        """``worker_arena_mb`` in bytes (the size of each of a worker's input and output areas)."""
        return self.worker_arena_mb * MIB


_INT32 = re.compile(r"[+-]?\d+")


def parse_grpc_channel_arguments(text: str) -> tuple[tuple[str, int | str], ...]:
    """Split ``key=value,key=value`` into gRPC options; int32-looking values become ints.

    Empty items (a trailing comma) are skipped; an item without ``=`` or with an empty key raises
    :class:`SettingsError`. A value may itself contain ``=`` (split on the first one).
    """
    options: list[tuple[str, int | str]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SettingsError(
                f"grpc_channel_arguments must be comma-separated key=value pairs, got {item!r}"
            )
        stripped = value.strip()
        if _INT32.fullmatch(stripped) and -(2**31) <= int(stripped) <= INT32_MAX:
            options.append((key, int(stripped)))
        else:
            options.append((key, value))
    return tuple(options)


def _check_range(name: str, value: float, low: int, high: int | None = None) -> None:
    """Raise unless ``low <= value <= high`` (``high`` None: no upper bound)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SettingsError(f"{name} must be a finite number, got {value}")
    if high is None:
        if value < low:
            raise SettingsError(f"{name} must be >= {low}, got {value}")
    elif not low <= value <= high:
        raise SettingsError(f"{name} must be in {low}..{high}, got {value}")


def _validate(s: Settings) -> None:
    """Every rule on settings, field by field and then across fields."""
    _check_range("port", s.port, 0, 65535)
    _check_range("rest_api_port", s.rest_api_port, 0, 65535)
    _check_range("rest_api_timeout_in_ms", s.rest_api_timeout_in_ms, 1, INT32_MAX)
    _check_range("grpc_max_threads", s.grpc_max_threads, 1, INT32_MAX)
    _check_range("max_message_bytes", s.max_message_bytes, 1, INT32_MAX)
    _check_range("rest_api_max_body_bytes", s.rest_api_max_body_bytes, 1, INT32_MAX)
    _check_range("model_config_file_poll_wait_seconds", s.model_config_file_poll_wait_seconds, 0)
    _check_range("file_system_poll_wait_seconds", s.file_system_poll_wait_seconds, 0)
    _check_range("tensorflow_session_parallelism", s.tensorflow_session_parallelism, 0)
    _check_range("tensorflow_intra_op_parallelism", s.tensorflow_intra_op_parallelism, 0)
    _check_range("tensorflow_inter_op_parallelism", s.tensorflow_inter_op_parallelism, 0)
    _check_range("workers", s.workers, 0)
    _check_range("worker_arena_mb", s.worker_arena_mb, 1)
    _check_range("max_tensor_elements", s.max_tensor_elements, 1)
    _check_range("ready_fd", s.ready_fd, -1)
    _check_range("shutdown_grace_seconds", s.shutdown_grace_seconds, 0)
    for name in ("worker_ping_interval_seconds", "worker_ping_timeout_seconds"):
        value = getattr(s, name)
        _check_range(name, value, 0)
        if value <= 0:
            raise SettingsError(f"{name} must be > 0, got {value}")
    if not s.model_name:
        raise SettingsError("model_name must not be empty")
    if any(not tag for tag in s.saved_model_tag_set):
        raise SettingsError(
            f"saved_model_tags must be comma-separated non-empty tags, got {s.saved_model_tags!r}"
        )
    parse_grpc_channel_arguments(s.grpc_channel_arguments)

    if s.rest_api_port != 0 and s.rest_api_port == s.port:
        raise SettingsError(
            f"rest_api_port must differ from port, both are {s.port} (use 0 to disable REST)"
        )
    if not s.model_base_path and not s.model_config_file:
        raise SettingsError("either model_base_path or model_config_file must be set")
    if s.batching_parameters_file and not s.enable_batching:
        raise SettingsError("batching_parameters_file is set without enable_batching")
    if (
        s.tensorflow_session_parallelism > 0
        and s.tensorflow_intra_op_parallelism > 0
        and s.tensorflow_inter_op_parallelism > 0
    ):
        raise SettingsError(
            "set either tensorflow_session_parallelism or tensorflow_intra_op_parallelism / "
            "tensorflow_inter_op_parallelism, not all three"
        )


def resolve_worker_threads(settings: Settings, cpus: int | None = None) -> tuple[int, int, int]:
    """Decide ``(workers, intra_op_threads, inter_op_threads)`` for the worker pool.

    ``cpus`` is the CPU budget (default :func:`available_cpus`). Per-pool thread counts follow TF
    Serving: ``tensorflow_intra_op_parallelism`` / ``tensorflow_inter_op_parallelism`` when either
    is set, else ``tensorflow_session_parallelism`` for both; 0 means auto. Then:

    - workers auto, intra auto: one single-threaded worker per CPU (several 1-thread processes
      beat one multi-threaded process on the same cores);
    - workers auto, intra ``k``: ``max(1, cpus // k)`` workers of ``k`` threads;
    - workers ``n``, intra auto: ``max(1, cpus // n)`` threads each;
    - both set: used as given.

    Auto-derived values always satisfy ``workers * intra_op <= cpus``. Only explicit values can
    exceed it (e.g. ``--workers=8`` on 2 CPUs); they are honoured and a warning is logged.
    Inter-op auto is 1: parallelism comes from the workers, not from concurrent operators.
    """
    cpus = available_cpus() if cpus is None else cpus
    if cpus < 1:
        raise SettingsError(f"cpus must be >= 1, got {cpus}")
    if settings.tensorflow_intra_op_parallelism > 0 or settings.tensorflow_inter_op_parallelism > 0:
        intra = settings.tensorflow_intra_op_parallelism
        inter = settings.tensorflow_inter_op_parallelism
    else:
        intra = inter = settings.tensorflow_session_parallelism
    workers = settings.workers
    if workers == 0 and intra == 0:
        workers, intra = cpus, 1
    elif workers == 0:
        workers = max(1, cpus // intra)
    elif intra == 0:
        intra = max(1, cpus // workers)
    inter = inter or 1
    if workers * intra > cpus:
        log.warning(
            "%d workers x %d intra-op threads = %d threads on %d CPUs: oversubscribed",
            workers,
            intra,
            workers * intra,
            cpus,
        )
    return workers, intra, inter
