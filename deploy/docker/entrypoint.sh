#!/bin/sh
# The image's entry point, with TF Serving's image conventions: serve ${MODEL_NAME} (default
# "model") from ${MODEL_BASE_PATH}/${MODEL_NAME} (default /models) with gRPC on 8500 and REST on
# 8501; every argument given to the container is appended, so a later flag wins
# (`--model_config_file=...` serves a config's models instead). `exec` makes tensorgate the
# container's main process, so the SIGTERM of `docker stop` / Kubernetes reaches it and drains.
set -eu
exec tensorgate --port=8500 --rest_api_port=8501 \
    --model_name="${MODEL_NAME:-model}" \
    --model_base_path="${MODEL_BASE_PATH:-/models}/${MODEL_NAME:-model}" \
    "$@"
