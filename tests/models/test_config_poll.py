"""Re-reading the model config file: a change is applied, anything unusable leaves the running
config in place (a fake worker pool at the one seam)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.models.config_poll import ConfigFilePoll
from gateway.models.manager import ModelManager
from tests.models.harness import versions
from tests.support.fakes import FakePool


async def test_a_rewritten_file_is_applied_and_a_bad_one_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    versions(tmp_path / "a", 1)
    versions(tmp_path / "b", 1)
    path = tmp_path / "models.config"
    a = ModelSpecConfig("a", str(tmp_path / "a"))
    pool = FakePool()
    models = ModelManager(pool, [a], intra_op=1, inter_op=1)

    def config(name: str) -> str:
        return f'model_config_list {{ config {{ name: "{name}" base_path: "{tmp_path / name}" }} }}'

    with caplog.at_level(logging.INFO, logger="gateway.models.config_poll"):
        await models.reconcile()
        path.write_text(config("a"))
        poll = ConfigFilePoll(str(path), models)
        assert not await poll.reload()  # unchanged: nothing to do
        for bad in ("model_config_list { config { name: ", ""):
            path.write_text(bad)  # unparsable, then empty ("Taking no action for empty config")
            assert not await poll.reload()
        path.unlink()
        assert not await poll.reload()
        assert models.specs() == [a] and pool.calls == [("load", "a:1")]
        path.write_text(config("b"))
        assert await poll.reload()
        assert [s.name for s in models.specs()] == ["b"]
        assert pool.calls[1:] == [("unload", "a:1"), ("load", "b:1")]
    assert "Failed to read ModelServerConfig file: Error parsing text-format" in caplog.text
    assert "Taking no action for empty config" in caplog.text
    assert "Could not read tensorflow.serving.ModelServerConfig file" in caplog.text


async def test_the_file_is_compared_with_the_file_last_read_not_the_config_in_force(
    tmp_path: Path,
) -> None:
    """An unload made another way (V2's repository) is not undone while the file is unchanged;
    a rewritten file is applied, and applying it tells ``on_change``."""
    versions(tmp_path / "a", 1)
    versions(tmp_path / "b", 1)
    a = ModelSpecConfig("a", str(tmp_path / "a"))
    b = ModelSpecConfig("b", str(tmp_path / "b"))
    path = tmp_path / "models.config"
    path.write_text(
        "model_config_list { "
        + "".join(f'config {{ name: "{s.name}" base_path: "{s.base_path}" }} ' for s in (a, b))
        + "}"
    )
    pushed: list[list[str]] = []
    models = ModelManager(
        FakePool(),
        [a, b],
        intra_op=1,
        inter_op=1,
        on_change=lambda: pushed.append(sorted(s.name for s in models.specs())),
    )

    await models.reconcile()
    poll = ConfigFilePoll(str(path), models)
    await models.apply([a])  # V2: unload b
    pushed.clear()
    assert not await poll.reload()  # the file did not change: b stays unloaded
    assert [s.name for s in models.specs()] == ["a"] and pushed == []
    path.write_text(path.read_text().replace('name: "a"', 'name: "c"').replace("/a", "/b"))
    assert await poll.reload()
    assert sorted(s.name for s in models.specs()) == ["b", "c"] and ["b", "c"] in pushed
