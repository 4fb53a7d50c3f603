"""The settings of what is served: the models (one, or a config file of several), how their
versions are found, loaded, retried and warmed up, and how their requests are batched.

One group of :class:`~gateway.config.settings.Settings` fields, each named after its flag and
documented in ``metadata["doc"]`` (:mod:`gateway.config.settings_field`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gateway.config.settings_field import setting

CACHE_MAX_BYTES = 20 * 1024**3
"""``--model_cache_max_bytes``' default: 20 GiB."""


def model_cache_dir(flag: str, env: dict[str, str] | None = None) -> str:
    """The folder ``--model_cache_dir`` names; "" means ``$XDG_CACHE_HOME/tensorgate/models``,
    or ``$HOME/.cache/tensorgate/models`` without it."""
    if flag:
        return flag
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME", "/tmp"), ".cache")
    return os.path.join(base, "tensorgate", "models")


@dataclass(frozen=True)
class ModelSettings:
    """Models, their lifecycle and their batching."""

    # --- models -----------------------------------------------------------------------------------
    model_name: str = setting(
        "default",
        'Name of the single model served from --model_base_path. Default "default", as TF '
        "Serving. Ignored when --model_config_file is set.",
    )
    model_base_path: str = setting(
        "",
        "Directory holding <version>/ subdirectories of the single model: a local path or an "
        "object URL (s3://bucket/prefix, gs://bucket/prefix, az://container/prefix; needs the "
        "[storage] extra; credentials from each cloud's standard environment, see docs/"
        'object-storage.md). Required unless --model_config_file is set. Default "".',
    )
    model_config_file: str = setting(
        "",
        "Text-format ModelServerConfig file listing the models to serve (several models, version "
        "policies, labels): a local path or an object URL. When set, --model_name and "
        '--model_base_path are ignored. Default "".',
    )
    model_cache_dir: str = setting(
        "",
        "tensorgate: folder of the local cache of model versions taken from object stores "
        "(s3://, gs://, az:// base paths). A version is downloaded once, appears whole, is "
        "reused after a restart, and is served from here when the store cannot be reached at "
        'start. Default "": $XDG_CACHE_HOME/tensorgate/models, else '
        "$HOME/.cache/tensorgate/models.",
    )
    model_cache_max_bytes: int = setting(
        CACHE_MAX_BYTES,
        "tensorgate: bound on the bytes of --model_cache_dir (>= 0; 0: no bound). Versions no "
        "longer served are evicted first, least recently used first; a served version never is. "
        "Default 21474836480 (20 GiB).",
    )
    model_config_file_poll_wait_seconds: int = setting(
        0,
        "Seconds between re-reads of --model_config_file (>= 0); 0 reads it once at start. A "
        "changed file is applied like HandleReloadConfigRequest (models added, changed, "
        "removed); an unreadable or invalid one is logged and the running config stays. "
        "Default 0, as TF Serving.",
    )
    enable_model_management_api: bool = setting(
        False,
        "tensorgate: answer ModelService.HandleReloadConfigRequest, which lets any client "
        "replace the served models. Off by default (the RPC answers UNIMPLEMENTED) because a "
        "model server must not let every client rewrite it; TF Serving has no such switch and "
        "always answers it.",
    )
    management_base_path_dirs: str = setting(
        "",
        "tensorgate: comma-separated directories under which a management call "
        "(HandleReloadConfigRequest) may set a model's base_path (symlinks and .. resolved; a "
        "base path already in force may always stay). Object-store URLs are not local paths: "
        "the store's own credentials govern them. A path outside is INVALID_ARGUMENT naming "
        'this flag, never the path. Default "": a management call may only keep the base '
        "paths in force.",
    )
    management_log_dirs: str = setting(
        "",
        "tensorgate: comma-separated directories under which a management call may set a "
        "model's logging_config filename_prefix (its directory, symlinks and .. resolved; a "
        "prefix already in force may always stay). A prefix outside is INVALID_ARGUMENT naming "
        'this flag, never the path. Default "": a management call may only keep the prefixes '
        "in force.",
    )
    allow_version_labels_for_unavailable_models: bool = setting(
        False,
        "Let a config assign a version label that is not in use yet to a version that is not "
        "available (not loaded yet). Without it, as with it for a label already in use, a label "
        'must point at an AVAILABLE version, else the config is refused ("Request to assign '
        'label to version N of model M, which is not currently available for inference"): a '
        "config with labels needs this flag at start. Default false, as TF Serving.",
    )
    max_num_load_retries: int = setting(
        5,
        "Times a failed model version load is retried (>= 0) before the version is given up "
        "(state END with its error); 0 tries once. Retries stop when a new config drops the "
        "model. Default 5, as TF Serving.",
    )
    load_retry_interval_micros: int = setting(
        60_000_000,
        "Microseconds between load retries; negative means no wait. Default 60000000 (1 minute), "
        "as TF Serving.",
    )
    num_load_threads: int = setting(
        0,
        "Model version loads (each with its warmup) that may run at once (>= 0); 0 = one at a "
        "time, as TF Serving loads in its manager's thread. A version waiting for a load retry "
        "takes no part in it: loads and retries of other versions and models go on meanwhile. "
        "The first config at start loads up to 4 x the CPUs at once (TF Serving's "
        "num_initial_load_threads). Default 0, as TF Serving.",
    )
    model_workers: str = setting(
        "",
        "tensorgate: how many worker processes host each model, as comma-separated name=N "
        "(*=N for every model not named), e.g. resnet=1,*=2; a model version is loaded, warmed "
        "up and served on its N least busy workers only (a TensorFlow model costs hundreds of "
        'MB per worker). Default "": every model on every worker.',
    )
    model_runtimes: str = setting(
        "",
        "tensorgate: which runtime serves each model, as comma-separated name=RUNTIME (*=RUNTIME "
        "for every model not named), RUNTIME being onnxruntime, tensorflow, openvino or "
        "openvino:PRECISION with PRECISION fp32 or bf16, e.g. resnet=openvino:bf16,*=openvino. "
        "OpenVINO serves ONNX models and SavedModels (without TensorFlow) and needs the "
        "[openvino] extra; its precision is fp32 unless bf16 is written here (OpenVINO's "
        "hardware default is never used). bf16 trades accuracy for speed on CPUs with bf16 "
        'instructions (docs/openvino.md). Default "": each platform\'s own runtime.',
    )
    file_system_poll_wait_seconds: int = setting(
        1,
        "Seconds between scans of model base paths for new versions (>= 0); 0 scans once at "
        "start. Default 1, as TF Serving (its negative 'testing only' values are refused).",
    )
    saved_model_tags: str = setting(
        "serve",
        "Comma-separated tags of the MetaGraphDef loaded from a TensorFlow SavedModel; unused "
        'for ONNX models. Default "serve", as TF Serving.',
    )
    enable_model_warmup: bool = setting(
        True,
        "Before a version takes traffic, replay its assets.extra/tf_serving_warmup_requests "
        "(TFRecord of PredictionLog: predict, classify, regress, multi_inference; at most 1000) "
        "on every worker that hosts it, for TensorFlow and ONNX models alike; a corrupt or "
        "mismatched record fails the load. With --enable_batching, also one run of each "
        "allowed_batch_sizes where the signature's shapes allow. Default true, as TF Serving.",
    )
    num_request_iterations_for_warmup: int = setting(
        0,
        "Times each warmup record is replayed (>= 0); 0 means once. Default 0, as TF Serving.",
    )
    enable_signature_method_name_check: bool = setting(
        False,
        "Require the signatures used by Classify/Regress/MultiInference to carry the matching "
        "method_name (tensorflow/serving/classify, ...). Default false, as TF Serving.",
    )
    # --- batching ---------------------------------------------------------------------------------
    enable_batching: bool = setting(
        False,
        "Batch requests per (model, version, signature) with BatchingParameters. Default false, "
        "as TF Serving.",
    )
    batching_parameters_file: str = setting(
        "",
        "Text-format BatchingParameters file overriding the batching defaults; needs "
        '--enable_batching. Default "" (TF Serving\'s defaults).',
    )
    enable_per_model_batching_parameters: bool = setting(
        False,
        "Read batching parameters from each model version's batching_params.pbtxt instead of "
        "--batching_parameters_file; only with --enable_batching. Default false, as TF Serving.",
    )
    max_queue_delay_ms: int = setting(
        0,
        "tensorgate: latency target of the batch queues in milliseconds (>= 0): a request that "
        "would wait longer than this for its batch to start (predicted from the measured batch "
        "time) is refused at once with UNAVAILABLE, so accepted requests keep their latency under "
        "overload. 0 = only the request's deadline limits the wait, as TF Serving. Default 0.",
    )
