"""The local cache of model versions taken from object stores, which outlives the process.

Layout: ``<root>/<scheme>-<bucket>-<name>-<hash of the model's URL>/<version>/`` holds one
version's files as the store lists them under ``<model URL>/<version>/``, and its manifest
(:data:`MANIFEST`: the version's URL and each file's size and tag). A version appears whole or not
at all: it is downloaded into ``.partial-<pid>-<version>-<random>/`` beside it (objects in
parallel, at most :data:`PARALLEL` at once, each checked against the size and tag the listing
showed), its files and manifest flushed to disk, then renamed into place; a crash mid-download
leaves only a ``.partial-`` folder, which the next cache over the same root removes. A version
in the cache whose manifest matches a new listing (every file's size and tag) is reused without
a download — after a restart too (a *hit*); one that differs is downloaded again.

The cache is bounded (``max_bytes``, 0: no bound): before a download, and after, versions that
are not in use (the caller says which: served or being loaded) are evicted, least recently used
first, until the versions kept fit; a version in use is never evicted, even if the versions in
use alone exceed the bound. :class:`CacheFigures` counts what the metrics page shows.

Every method blocks (file system and network): call it from a thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, cast

from gateway.storage.failures import StoreError
from gateway.storage.objects import ObjectInfo, ObjectStore
from gateway.storage.urls import ObjectUrl

log = logging.getLogger(__name__)

MANIFEST = ".tensorgate-version.json"
"""A cached version's manifest, inside its folder (renamed into place with it)."""
PARTIAL = ".partial-"
RETIRED = ".retired-"
PARALLEL = 8
"""Objects of one version downloaded at once."""
PROGRESS_EVERY_S = 10.0
"""Seconds between two progress lines of a download that is still running."""


@dataclass
class CacheFigures:
    """What the metrics page shows: ``bytes`` held now; versions found in the cache
    (``hits``) and downloaded (``downloads``), and the ``download_seconds`` those took."""

    bytes: int = 0
    hits: int = 0
    downloads: int = 0
    download_seconds: float = 0.0


@dataclass(frozen=True)
class VersionFile:
    """One object of a version: its path inside the version's folder, and the object."""

    path: str
    obj: ObjectInfo


class VersionCache:
    """The cache under ``root`` (created on first use), bounded by ``max_bytes`` (0: none).
    ``clock``: seconds, for the download times (``time.monotonic``)."""

    def __init__(
        self, root: str, max_bytes: int = 0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.figures = CacheFigures()
        self._clock = clock
        self._stop = threading.Event()
        self._lock = threading.Lock()
        """Held while the folders of versions change (a rename in or out), never while one
        downloads."""
        self._ready = False
        self._prepare_lock = threading.Lock()

    def close(self) -> None:
        """Stop the downloads under way (each fails with StoreError; nothing partial stays)."""
        self._stop.set()

    # -- where ----------------------------------------------------------------------------------
    def model_folder(self, model_url: ObjectUrl) -> str:
        """The folder of every cached version of the model at ``model_url``."""
        text = str(model_url)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        name = model_url.key.rsplit("/", 1)[-1] if model_url.key else ""
        readable = re.sub(r"[^A-Za-z0-9._-]", "_", f"{model_url.scheme}-{model_url.bucket}-{name}")
        return os.path.join(self.root, f"{readable[:80]}-{digest}")

    def folder(self, model_url: ObjectUrl, version: int) -> str:
        """Where ``version`` of the model at ``model_url`` is (or would be) cached."""
        return os.path.join(self.model_folder(model_url), str(version))

    # -- reading --------------------------------------------------------------------------------
    def cached(self, model_url: ObjectUrl) -> dict[int, str]:
        """The versions of the model at ``model_url`` whole in the cache, by version (what a
        start with the store out of reach serves)."""
        found: dict[int, str] = {}
        base = self.model_folder(model_url)
        with contextlib.suppress(OSError):
            for entry in os.listdir(base):
                folder = os.path.join(base, entry)
                if entry.isdigit() and _manifest(folder) is not None:
                    found[int(entry)] = folder
        return found

    def lookup(self, model_url: ObjectUrl, version: int, files: Collection[VersionFile]) -> bool:
        """True when ``version`` is cached exactly as ``files`` list it (a hit: counted, and
        the version's last use set to now)."""
        folder = self.folder(model_url, version)
        manifest = _manifest(folder)
        if manifest is None or manifest.get("files") != _listed(files):
            return False
        for item in files:
            try:
                if os.path.getsize(os.path.join(folder, item.path)) != item.obj.size:
                    return False
            except OSError:
                return False
        with contextlib.suppress(OSError):
            os.utime(os.path.join(folder, MANIFEST))
        with self._lock:
            self.figures.hits += 1
        return True

    # -- downloading ----------------------------------------------------------------------------
    def fetch(
        self,
        store: ObjectStore,
        model_url: ObjectUrl,
        version: int,
        files: Collection[VersionFile],
        keep: Collection[str] = (),
    ) -> str:
        """The folder holding ``version`` exactly as ``files`` list it: from the cache, or
        downloaded from ``store`` into it. ``keep``: folders of versions in use (never evicted).
        StoreError when a download fails (nothing of it stays); OSError when the cache cannot
        be written."""
        folder = self.folder(model_url, version)
        self._prepare()
        if self.lookup(model_url, version, files):
            return folder
        total = sum(f.obj.size for f in files)
        self.trim(keep, room_for=total)
        started = self._clock()
        where = str(model_url.child(str(version)))
        partial = os.path.join(
            self.model_folder(model_url),
            f"{PARTIAL}{os.getpid()}-{version}-{secrets.token_hex(4)}",
        )
        os.makedirs(partial)
        try:
            self._download(store, partial, files, where, total)
            _write_manifest(partial, where, files)
            self._install(partial, folder)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        seconds = self._clock() - started
        with self._lock:
            self.figures.downloads += 1
            self.figures.download_seconds += seconds
        log.info(
            "downloaded %s (%d files, %.1f MB) in %.1f s into %s",
            where, len(files), total / 1e6, seconds, folder,
        )  # fmt: skip
        self.trim([*keep, folder])  # the version fetched is about to load
        return folder

    def _download(
        self,
        store: ObjectStore,
        partial: str,
        files: Collection[VersionFile],
        where: str,
        total: int,
    ) -> None:
        """Every file of a version into ``partial``, in parallel; the first failure cancels the
        rest and is raised."""
        done = [0]
        done_lock = threading.Lock()

        def one(item: VersionFile) -> None:
            path = os.path.join(partial, item.path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            written = store.download(item.obj, path, self._stop)
            if written != item.obj.size:
                raise StoreError(
                    "changed", where, "get",
                    f"{item.path} has {written} bytes, the listing said {item.obj.size}",
                )  # fmt: skip
            _flush(path)
            with done_lock:
                done[0] += written

        queue = list(files)
        errors: list[BaseException] = []

        def work() -> None:
            while True:
                with done_lock:
                    if errors or not queue:
                        return
                    item = queue.pop()
                try:
                    one(item)
                except BaseException as exc:
                    with done_lock:
                        errors.append(exc)

        threads = [
            threading.Thread(target=work, name="model-download", daemon=True)
            for _ in range(max(1, min(PARALLEL, len(files))))
        ]  # daemons: an exit during a stalled download does not wait for it
        for thread in threads:
            thread.start()
        while True:
            next_line = time.monotonic() + PROGRESS_EVERY_S
            for thread in threads:
                thread.join(max(0.0, next_line - time.monotonic()))
            if not any(t.is_alive() for t in threads):
                break
            with done_lock:
                now = done[0]
            log.info(
                "downloading %s: %.1f of %.1f MB (%.0f%%)",
                where, now / 1e6, total / 1e6, 100 * now / max(total, 1),
            )  # fmt: skip
        if errors:
            raise errors[0]

    def _install(self, partial: str, folder: str) -> None:
        """Rename ``partial`` to ``folder`` (a stale copy there goes first)."""
        with self._lock:
            if os.path.exists(folder):
                _retire(folder)
            os.rename(partial, folder)
            _flush_folder(os.path.dirname(folder))

    # -- the bound ------------------------------------------------------------------------------
    def trim(self, keep: Collection[str] = (), room_for: int = 0) -> None:
        """Evict versions not in ``keep``, least recently used first, until the cache plus
        ``room_for`` bytes fits ``max_bytes``; update :attr:`figures`."""
        self._prepare()
        with self._lock:
            entries = self._entries()
            held = sum(size for _, size, _ in entries)
            if self.max_bytes > 0 and held + room_for > self.max_bytes:
                kept = {os.path.realpath(k) for k in keep}
                for folder, size, _ in sorted(entries, key=lambda e: e[2]):
                    if held + room_for <= self.max_bytes:
                        break
                    if os.path.realpath(folder) in kept:
                        continue
                    _retire(folder)
                    held -= size
                    log.info("evicted %s from the model cache (%.1f MB)", folder, size / 1e6)
                if held + room_for > self.max_bytes:
                    log.warning(
                        "the model cache holds %.1f MB of versions in use, over its bound of "
                        "%.1f MB (--model_cache_max_bytes): none of them is evicted",
                        held / 1e6, self.max_bytes / 1e6,
                    )  # fmt: skip
            self.figures.bytes = held

    def _entries(self) -> list[tuple[str, int, float]]:
        """Every cached version: (folder, bytes, last use)."""
        entries = []
        with contextlib.suppress(OSError):
            for model in os.listdir(self.root):
                base = os.path.join(self.root, model)
                if model.startswith(".") or not os.path.isdir(base):
                    continue
                for entry in os.listdir(base):
                    folder = os.path.join(base, entry)
                    manifest = _manifest(folder) if entry.isdigit() else None
                    if manifest is not None:
                        size = sum(int(s) for s, _ in manifest["files"].values())
                        used = os.path.getmtime(os.path.join(folder, MANIFEST))
                        entries.append((folder, size, used))
        return entries

    def _prepare(self) -> None:
        """Create the root, and remove what a process that died left half done (once)."""
        with self._prepare_lock:
            if self._ready:
                return
            os.makedirs(self.root, exist_ok=True)
            for model in os.listdir(self.root):
                base = os.path.join(self.root, model)
                if not os.path.isdir(base):
                    continue
                for entry in os.listdir(base):
                    if entry.startswith((PARTIAL, RETIRED)) and not _alive(entry):
                        shutil.rmtree(os.path.join(base, entry), ignore_errors=True)
            self._ready = True
        self.trim()


def _listed(files: Collection[VersionFile]) -> dict[str, list[object]]:
    return {f.path: [f.obj.size, f.obj.tag] for f in sorted(files, key=lambda f: f.path)}


def _manifest(folder: str) -> Mapping[str, Any] | None:
    """A version folder's manifest, or None when there is none (or it cannot be read)."""
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return None
    return cast(dict[str, Any], data)


def _write_manifest(partial: str, where: str, files: Collection[VersionFile]) -> None:
    path = os.path.join(partial, MANIFEST)
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"url": where, "files": _listed(files)}, file, indent=1)
    _flush(path)
    _flush_folder(partial)


def _retire(folder: str) -> None:
    """Remove a version folder: renamed away first (it is gone at once), then deleted."""
    retired = os.path.join(
        os.path.dirname(folder), f"{RETIRED}{os.getpid()}-{secrets.token_hex(4)}"
    )
    os.rename(folder, retired)
    shutil.rmtree(retired, ignore_errors=True)


def _alive(entry: str) -> bool:
    """Whether the process that named ``entry`` (``.partial-<pid>-...``) still runs."""
    try:
        pid = int(entry.split("-")[1])
    except (IndexError, ValueError):
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _flush(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _flush_folder(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
