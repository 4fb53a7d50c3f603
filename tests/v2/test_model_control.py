"""The repository extension over the model config: a fake model lifecycle (the one seam) records
each config applied, so what load and unload ask of it is exact."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import InvalidArgument, NotFound, ServingError, Unavailable
from gateway.serving.registry import Servable, State, VersionStatus
from gateway.v2.model_control import ModelRepository
from gateway.v2.repository_codec import IndexEntry, RepositoryCall

A = ModelSpecConfig(name="a", base_path="/models/a")
B = ModelSpecConfig(name="b", base_path="/models/b")


class FakeModels:
    """Serves exactly the config last applied; ``fail`` names models whose load fails."""

    def __init__(self, specs: Sequence[ModelSpecConfig]) -> None:
        self.config = list(specs)
        self.known = [s.name for s in specs]
        self.applied: list[list[str]] = []
        self.fail: set[str] = set()

    def specs(self) -> list[ModelSpecConfig]:
        return list(self.config)

    async def apply(self, specs: Sequence[ModelSpecConfig]) -> None:
        self.applied.append([s.name for s in specs])
        await asyncio.sleep(0)  # as a real apply, let other tasks run before the change lands
        self.config = list(specs)
        self.known += [s.name for s in specs if s.name not in self.known]
        failed = [s.name for s in specs if s.name in self.fail]
        if failed:
            raise ServingError(f"1 model(s) did not become available: {failed[0]}")

    async def rescan(self, name: str) -> None:
        self.applied.append([f"rescan {name}"])
        if name in self.fail:
            raise ServingError(f"1 model(s) did not become available: {name}")

    def model_names(self) -> list[str]:
        return list(self.known)

    def statuses(self, name: str, version: int | None = None) -> list[VersionStatus]:
        served = any(s.name == name for s in self.config)
        return [VersionStatus(1, State.AVAILABLE if served else State.END)]

    def is_available(self, name: str) -> bool:
        return any(s.name == name for s in self.config)

    def all_available(self) -> bool:
        return True

    def resolve(self, name: str, version: int | None = None, label: str | None = None) -> Servable:
        raise NotImplementedError


def _repository(
    *specs: ModelSpecConfig, management: bool = True
) -> tuple[ModelRepository, FakeModels]:
    models = FakeModels(specs)
    return ModelRepository(models, management=management), models


async def test_unload_then_load_brings_the_entry_back() -> None:
    repository, models = _repository(A, B)
    await repository.unload(RepositoryCall("a"))
    assert models.applied == [["b"]]
    assert repository.index(ready_only=False) == [
        IndexEntry("a", "1", "UNAVAILABLE", "unloaded"),
        IndexEntry("b", "1", "READY"),
    ]
    assert repository.index(ready_only=True) == [IndexEntry("b", "1", "READY")]
    await repository.load(RepositoryCall("a"))
    assert models.applied[-1] == ["b", "a"] and models.config[-1] is A


async def test_load_of_a_served_model_polls_it_again_and_unknown_names() -> None:
    repository, models = _repository(A)
    await repository.load(RepositoryCall("a"))
    assert models.applied == [["rescan a"]]
    with pytest.raises(NotFound, match="failed to load 'zz', failed to poll from model repository"):
        await repository.load(RepositoryCall("zz"))
    await repository.unload(RepositoryCall("zz"))  # not served: nothing to do (Triton's)
    assert models.applied == [["rescan a"]]


async def test_a_failed_load_is_invalid_argument_and_the_model_stays_configured() -> None:
    repository, models = _repository(A, B)
    await repository.unload(RepositoryCall("b"))
    models.fail.add("b")
    with pytest.raises(InvalidArgument, match="load failed for model 'b': 1 model"):
        await repository.load(RepositoryCall("b"))
    models.fail.clear()
    await repository.load(RepositoryCall("b"))  # still in the config: polled again
    assert models.applied[-1] == ["rescan b"]


async def test_without_the_management_api_load_and_unload_are_triton_s_refusal() -> None:
    repository, models = _repository(A, management=False)
    for change in (repository.load, repository.unload):
        with pytest.raises(Unavailable, match=r"^explicit model load / unload is not allowed"):
            await change(RepositoryCall("a"))
    assert models.applied == []
    assert repository.index(ready_only=False) == [IndexEntry("a", "1", "READY")]


async def test_changes_run_one_at_a_time() -> None:
    """Two unloads at once each take their own model out (neither undoes the other)."""
    repository, models = _repository(A, B)

    await asyncio.gather(
        repository.unload(RepositoryCall("a")), repository.unload(RepositoryCall("b"))
    )
    assert models.config == []
