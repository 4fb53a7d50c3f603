"""TF Serving's rules on a new model config, checked before anything of it is applied.

``ServerCore::ReloadConfig`` refuses a config that changes a model's platform, and
``UpdateModelVersionLabelMap`` one whose version labels point at versions that are not AVAILABLE
(unless ``--allow_version_labels_for_unavailable_models`` lets a *new* label do so). Texts are
TF Serving's, which clients and operators match on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import Code, FailedPrecondition, InvalidArgument, ServingError


def check_platforms(current: Mapping[str, ModelSpecConfig], new: Iterable[ModelSpecConfig]) -> None:
    """InvalidArgument when a model of both configs changes its ``model_platform``."""
    for spec in new:
        old = current.get(spec.name)
        if old is not None and old.platform != spec.platform:
            raise InvalidArgument(
                f"Illegal to change a model's platform. For model {spec.name} platform was "
                f"{old.platform} and new platform requested is {spec.platform}"
            )


def check_labels(
    current: Mapping[str, ModelSpecConfig],
    new: Iterable[ModelSpecConfig],
    available: Callable[[str, int], bool],
    *,
    allow_unavailable: bool,
) -> None:
    """FailedPrecondition when a label of ``new`` names a version that is not ``available``.

    With ``allow_unavailable`` a label may still do so when it is new, or names the version it
    already names in ``current``: an in-use label never moves to a version that cannot serve,
    so requests for it never fail while the new version loads.
    """
    for spec in new:
        in_use = current[spec.name].labels if spec.name in current else {}
        for label, version in spec.labels.items():
            if available(spec.name, version):
                continue
            if allow_unavailable and in_use.get(label, version) == version:
                continue
            raise FailedPrecondition(
                f"Request to assign label to version {version} of model {spec.name}, "
                "which is not currently available for inference"
            )


def not_available_error(failures: Mapping[tuple[str, int], ServingError | None]) -> ServingError:
    """``ServerCore::WaitUntilModelsAvailable``'s UNKNOWN error for new models that did not
    become available: ``failures`` maps (model, version) to its error; version -1 and no error
    stand for a model with no version under its base path."""
    parts = []
    for (name, version), error in sorted(failures.items()):
        if version < 0:
            parts.append(f"{{name: {name}}} found no version to load")
            continue
        reason = "" if error is None else f" due to error: {error.code.name}: {error.message}"
        parts.append(f"{{name: {name} version: {version}}}{reason}")
    text = "".join(f"{{{part}}}, " for part in parts)
    return ServingError(
        f"{len(failures)} model(s) did not become available: {{{text}}}", Code.UNKNOWN
    )
