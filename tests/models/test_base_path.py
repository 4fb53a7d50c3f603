"""A base path that is missing, with a fake pool at the one seam.

TF Serving's file-system source refuses to publish an empty version list for a base path that
does not exist ("Could not find base path ..."): the served versions stay, whether the
directory was moved away for a moment or a config rewrite names a path with a typo. A base path
that exists but holds no version does publish nothing (its versions unload).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import NotFound
from gateway.serving.registry import State
from tests.models.harness import manager, versions
from tests.support.fakes import FakeClock, FakePool


def missing_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "Could not find base path" in r.getMessage()]


async def test_a_base_path_moved_away_for_a_while_keeps_its_versions_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = tmp_path / "m"
    versions(base, 1, 2)
    pool = FakePool()
    models = manager(pool, ModelSpecConfig("m", str(base)))
    await models.reconcile()
    base.rename(tmp_path / "away")
    await models.reconcile()  # a poll while it is gone
    assert pool.calls == [("load", "m:2")]  # nothing unloaded
    assert models.resolve("m").version == 2
    assert [(s.version, s.state) for s in models.statuses("m")] == [(2, State.AVAILABLE)]
    (line,) = missing_lines(caplog)
    assert f"Could not find base path {base} for servable m" in line
    (tmp_path / "away").rename(base)
    versions(base, 3)
    await models.reconcile()
    assert pool.calls[1:] == [("load", "m:3"), ("unload", "m:2")]


async def test_a_long_outage_is_logged_once_a_minute_and_its_end_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.models.base_path")
    base = tmp_path / "m"
    versions(base, 1)
    clock = FakeClock()
    models = manager(FakePool(), ModelSpecConfig("m", str(base)), clock=clock.now)
    await models.reconcile()
    base.rename(tmp_path / "away")
    for _ in range(30):  # polls a second apart for half a minute: one line
        await models.reconcile()
        clock.advance(1.0)
    assert len(missing_lines(caplog)) == 1
    clock.advance(30.0)
    await models.reconcile()
    assert len(missing_lines(caplog)) == 2 and "missing for 60 s" in missing_lines(caplog)[-1]
    (tmp_path / "away").rename(base)
    await models.reconcile()
    found = [r for r in caplog.records if "found again" in r.getMessage()]
    assert len(found) == 1 and found[0].levelno == logging.INFO


async def test_a_config_rewrite_naming_a_base_path_that_does_not_exist_keeps_the_model_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    versions(tmp_path / "models" / "m", 1)
    pool = FakePool()
    models = manager(pool)
    typo = ModelSpecConfig("m", str(tmp_path / "mdoels" / "m"))

    await models.apply([ModelSpecConfig("m", str(tmp_path / "models" / "m"))])
    await models.apply([typo])  # answered OK, as TF Serving's ReloadConfig
    assert models.specs() == [typo]
    assert models.resolve("m").version == 1
    assert [(s.version, s.state) for s in models.statuses("m")] == [(1, State.AVAILABLE)]
    assert pool.calls == [("load", "m:1")]
    (line,) = missing_lines(caplog)
    assert f"Could not find base path {typo.base_path} for servable m" in line


async def test_a_new_model_whose_base_path_does_not_exist_yet_has_no_versions_until_it_does(
    tmp_path: Path,
) -> None:
    base = tmp_path / "later"
    pool = FakePool()
    models = manager(pool)
    await models.apply([ModelSpecConfig("later", str(base))])  # not a failed reload
    with pytest.raises(NotFound, match=r"^Could not find any versions of model later$"):
        models.statuses("later")
    assert not models.is_available("later")
    versions(base, 4)
    await models.reconcile()
    assert models.resolve("later").version == 4
