"""One real gateway serving the SavedModels of TF Serving's own tests and docs (built by
``tf_compat_models_script.py``), shared by ``tests/e2e/test_tf_compat.py`` and
``tests/e2e/test_g3doc.py`` through the session fixture ``served`` (tests/e2e/conftest.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.tf_compat_models_script import compat_models_root

TWO_VERSIONS = "saved_model_half_plus_two_2_versions"
VERSION_LABEL = "Version_Label"

MODELS = {
    "default": "saved_model_half_plus_two_cpu",
    "half_plus_two": "saved_model_half_plus_two_cpu",
    "half_plus_three": "saved_model_half_plus_three",
    TWO_VERSIONS: TWO_VERSIONS,
    "tf_saved_model_save": "tf_saved_model_save",
    "tf_saved_model_save_multiple_signatures": "tf_saved_model_save_multiple_signatures",
    "keras_sequential_saved_model_save": "keras_sequential_saved_model_save",
    "saved_model_half_plus_three": "saved_model_half_plus_three",  # api_rest.md's name for it
    "signature_defs_doc": "signature_defs_doc",
}
"""Served model name → model directory (TF Serving's tests serve half_plus_two as ``default``)."""


@dataclass(frozen=True)
class Served:
    process: GatewayProcess
    rest: str
    """``http://127.0.0.1:<rest port>``"""
    models: Path


def model_config(root: Path) -> str:
    """A ModelServerConfig in the style of upstream's ``good_model_config.txt``."""
    entries = []
    for name, directory in MODELS.items():
        extra = ""
        if name == TWO_VERSIONS:
            extra = (
                "\n    model_version_policy: { specific: { versions: 123 } },"
                f'\n    version_labels: {{ key: "{VERSION_LABEL}" value: 123 }}'
            )
        entries.append(
            f'  config: {{\n    name: "{name}",\n    base_path: "{root / directory}",'
            f'\n    model_platform: "tensorflow",{extra}\n  }}'
        )
    return "model_config_list: {\n\n" + ",\n".join(entries) + "\n\n}\n"


@contextlib.contextmanager
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One gateway, one worker (TensorFlow costs ~600 MB per worker process), with upstream's
    ``RunServer`` flags (a longer REST timeout than its 5 s, for loaded test machines). The
    config labels version 123 at start, which needs
    ``--allow_version_labels_for_unavailable_models`` (upstream's handler test instead reloads
    the config with the label once the version is available)."""
    root = compat_models_root(tmp_path_factory.getbasetemp())
    config = tmp_path_factory.mktemp("compat_config") / "good_model_config.conf"
    config.write_text(model_config(root))
    args = [
        f"--model_config_file={config}",
        "--allow_version_labels_for_unavailable_models",
        "--rest_api_port=-1",
        "--rest_api_timeout_in_ms=60000",
        "--grpc_channel_arguments=grpc.max_connection_age_ms=2000,grpc.lb_policy_name=grpclb",
        "--workers=1",
        "--tensorflow_intra_op_parallelism=1",
        "--tensorflow_inter_op_parallelism=1",
        "--file_system_poll_wait_seconds=0",
        "--max_num_load_retries=0",  # a model that fails fails the tests now, not in 5 minutes
    ]
    with running_gateway(args, tmp_path_factory.mktemp("compat_logs")) as process:
        yield Served(process, f"http://127.0.0.1:{process.rest_port}", root)
