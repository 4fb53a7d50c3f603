"""The version cache over a store faked at its one seam (:class:`ObjectStore`, files in a
folder): whole or nothing, checked against the listing, reused, bounded without touching a
version in use."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gateway.storage.cache import MANIFEST, PARTIAL, VersionCache, VersionFile
from gateway.storage.failures import StoreError
from gateway.storage.objects import ObjectInfo
from gateway.storage.urls import ObjectUrl

MODEL = ObjectUrl("s3", "models", "m")


class FolderStore:
    """Objects are files under ``root``; ``fail_on`` names a key whose download fails after
    half its bytes are written."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fail_on = ""
        self.downloads = 0

    def put(self, key: str, data: bytes) -> None:
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def list(self, prefix: str) -> list[ObjectInfo]:
        found = []
        for path in sorted(self.root.rglob("*")):
            key = path.relative_to(self.root).as_posix()
            if path.is_file() and key.startswith(prefix):
                data = path.read_bytes()
                found.append(ObjectInfo(key, len(data), str(hash(data))))
        return found

    def download(self, obj: ObjectInfo, path: str, stop: threading.Event) -> int:
        self.downloads += 1
        data = (self.root / obj.key).read_bytes()
        with open(path, "xb") as out:
            if obj.key == self.fail_on:
                out.write(data[: len(data) // 2])
                raise StoreError("unreachable", "s3://models", "get", "connection reset")
            out.write(data)
        return len(data)

    def read(self, key: str) -> bytes:
        return (self.root / key).read_bytes()


def files_of(store: FolderStore, version: int) -> list[VersionFile]:
    prefix = f"m/{version}/"
    return [VersionFile(o.key[len(prefix) :], o) for o in store.list(prefix)]


@pytest.fixture
def store(tmp_path: Path) -> FolderStore:
    store = FolderStore(tmp_path / "bucket")
    store.put("m/1/model.onnx", b"one" * 100)
    store.put("m/1/assets.extra/tf_serving_warmup_requests", b"warm")
    store.put("m/2/model.onnx", b"two" * 100)
    return store


def test_a_version_is_downloaded_once_then_found_again_after_a_restart(
    store: FolderStore, tmp_path: Path
) -> None:
    cache = VersionCache(str(tmp_path / "cache"))
    folder = cache.fetch(store, MODEL, 1, files_of(store, 1))
    assert Path(folder, "model.onnx").read_bytes() == b"one" * 100
    assert Path(folder, "assets.extra", "tf_serving_warmup_requests").read_bytes() == b"warm"
    assert (cache.figures.downloads, cache.figures.hits, store.downloads) == (1, 0, 2)
    again = VersionCache(str(tmp_path / "cache"))  # a new process
    assert again.fetch(store, MODEL, 1, files_of(store, 1)) == folder
    assert (again.figures.downloads, again.figures.hits, store.downloads) == (0, 1, 2)
    assert again.cached(MODEL) == {1: folder}
    assert again.figures.bytes == 304


def test_a_version_changed_in_the_store_is_downloaded_again(
    store: FolderStore, tmp_path: Path
) -> None:
    cache = VersionCache(str(tmp_path / "cache"))
    folder = cache.fetch(store, MODEL, 2, files_of(store, 2))
    store.put("m/2/model.onnx", b"TWO" * 100)  # same size, another tag
    assert cache.fetch(store, MODEL, 2, files_of(store, 2)) == folder
    assert Path(folder, "model.onnx").read_bytes() == b"TWO" * 100
    assert cache.figures.downloads == 2


def test_a_failed_download_leaves_nothing_loadable(store: FolderStore, tmp_path: Path) -> None:
    cache = VersionCache(str(tmp_path / "cache"))
    store.fail_on = "m/1/model.onnx"
    with pytest.raises(StoreError):
        cache.fetch(store, MODEL, 1, files_of(store, 1))
    model_folder = Path(cache.model_folder(MODEL))
    assert sorted(os.listdir(model_folder)) == []
    assert cache.cached(MODEL) == {}


def test_what_a_dead_process_left_half_done_is_removed(store: FolderStore, tmp_path: Path) -> None:
    cache = VersionCache(str(tmp_path / "cache"))
    cache.fetch(store, MODEL, 2, files_of(store, 2))
    model_folder = Path(cache.model_folder(MODEL))
    dead = model_folder / f"{PARTIAL}999999999-1-abcd"  # no such pid
    dead.mkdir()
    (dead / "model.onnx").write_bytes(b"half")
    (model_folder / "1").mkdir()  # a version folder without its manifest: not whole
    restarted = VersionCache(str(tmp_path / "cache"))
    assert restarted.cached(MODEL) == {2: str(model_folder / "2")}
    restarted.trim()
    assert not dead.exists()


def test_the_bound_evicts_versions_not_in_use_least_recent_first(
    store: FolderStore, tmp_path: Path
) -> None:
    store.put("m/3/model.onnx", b"3" * 300)
    cache = VersionCache(str(tmp_path / "cache"), max_bytes=700)
    one = cache.fetch(store, MODEL, 1, files_of(store, 1))
    two = cache.fetch(store, MODEL, 2, files_of(store, 2))
    os.utime(Path(one, MANIFEST), (1, 1))  # the least recently used
    cache.fetch(store, MODEL, 3, files_of(store, 3), keep=[two])
    assert sorted(cache.cached(MODEL)) == [2, 3]
    assert cache.figures.bytes == 600


def test_a_version_in_use_is_never_evicted(store: FolderStore, tmp_path: Path) -> None:
    cache = VersionCache(str(tmp_path / "cache"), max_bytes=350)
    one = cache.fetch(store, MODEL, 1, files_of(store, 1))
    two = cache.fetch(store, MODEL, 2, files_of(store, 2), keep=[one])
    assert sorted(cache.cached(MODEL)) == [1, 2]  # both in use: over the bound, both stay
    cache.trim(keep=[two])
    assert sorted(cache.cached(MODEL)) == [2]
