"""Model base paths in object stores (``s3://``, ``gs://``, ``az://``): versions listed, then
brought into the local cache before they load, so that everything downstream (the workers, the
warmup file, ``batching_params.pbtxt``, placement) reads a local folder.

Listing (:meth:`RemoteBasePath.poll`), as TF Serving's file-system source reads a base path: one
listing of the model's prefix per poll (every object under it, never the whole bucket); an
integer-named folder is a version. A listing that fails changes nothing (the served versions
stay); it is logged at once with its reason, then once a minute while it lasts, and the next
listings wait longer after each failure (exponential back-off with jitter, at most
:data:`BACKOFF_MAX_S`), so an outage is not hammered; the first that succeeds is logged and the
polls go on as before. A listing that finds nothing under the prefix is a base path that does
not exist (TF Serving's rule for a prefix of no object): nothing changes either. Only a listing
that finds objects but no version unloads. When the store cannot be reached before any listing
succeeded (a start during an outage), the versions whole in the cache are served (logged).

Fetching (:meth:`ModelStorage.fetch`, in each load attempt): a version is taken as the last
listing showed it, or listed again when its load is retried; a SavedModel whose ``variables/`` is
not there yet is refused (FAILED_PRECONDITION: still being uploaded), and so is an object whose
path would leave the version's folder; then the cache gives its folder, downloading it if needed
(:class:`~gateway.storage.cache.VersionCache`). Errors name the bucket, the operation and the
store's reason, never a credential.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable, Collection

from gateway.errors import FailedPrecondition
from gateway.models.versions import SAVED_MODEL_FILES
from gateway.storage.blocking import off_loop
from gateway.storage.cache import CacheFigures, VersionCache, VersionFile
from gateway.storage.failures import StoreError
from gateway.storage.objects import ObjectInfo
from gateway.storage.stores import store_for
from gateway.storage.urls import ObjectUrl, parse_url

log = logging.getLogger(__name__)

BACKOFF_FIRST_S = 1.0
"""Wait before the listing that follows a first failure (then doubled each failure)."""
BACKOFF_MAX_S = 30.0
REPEAT_S = 60.0
"""Seconds between two lines about the same outage."""
VARIABLES = "variables/"


class ModelStorage:
    """The object stores of every model of one manager, and the cache of their versions under
    ``cache_dir`` (bounded by ``max_bytes``; made on first use). ``in_use``: the cache folders
    of the versions served or being loaded, read on the event loop (never evicted)."""

    def __init__(
        self,
        cache_dir: str,
        max_bytes: int,
        in_use: Callable[[], Collection[str]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cache = VersionCache(cache_dir, max_bytes)
        self._in_use = in_use
        self._clock = clock
        self._listed: dict[str, dict[int, list[ObjectInfo]]] = {}
        """Model URL → the objects of each version, as its last successful listing showed."""
        self._used = False

    def watch(self, model: str) -> RemoteBasePath:
        """A new watch of ``model``'s base path in a store."""
        self._used = True
        return RemoteBasePath(model, self, self._clock)

    def figures(self) -> CacheFigures | None:
        """The cache's figures, once a model has an object URL (None before)."""
        return self.cache.figures if self._used else None

    def folder(self, version_url: str) -> str:
        """Where the version at ``version_url`` is cached."""
        model_url, version = _split(version_url)
        return self.cache.folder(model_url, version)

    def close(self) -> None:
        """Stop the downloads under way."""
        self.cache.close()

    def _fetch_now(
        self, model_url: ObjectUrl, version: int, files: list[VersionFile], keep: Collection[str]
    ) -> str:
        return self.cache.fetch(store_for(model_url), model_url, version, files, keep)

    def listed(self, model_url: ObjectUrl, versions: dict[int, list[ObjectInfo]]) -> None:
        self._listed[str(model_url)] = versions

    async def fetch(self, version_url: str, fresh: bool) -> str:
        """The local folder of the version at ``version_url``: as the last listing showed it,
        or listed again when ``fresh`` (a retried load); from the cache when the store cannot
        be reached and the version is cached. ServingError naming the failure."""
        model_url, version = _split(version_url)
        objects = None if fresh else self._listed.get(str(model_url), {}).get(version)
        if objects is None:
            try:
                objects = await _list(model_url.child(str(version)))
            except StoreError as exc:
                cached = self.cache.cached(model_url).get(version)
                if cached is None:
                    raise exc.serving() from None
                log.warning("%s; loading %s from the cache (%s)", exc, version_url, cached)
                return cached
        files = version_files(version_url, model_url.child(str(version)).key + "/", objects)
        keep = self._in_use()
        try:
            fetch = functools.partial(self._fetch_now, model_url, version, files, keep)
            return await off_loop(fetch, "model download")
        except StoreError as exc:
            raise exc.serving() from None
        except OSError as exc:
            raise FailedPrecondition(
                f"cannot write {version_url} into the model cache {self.cache.root}: "
                f"{exc.strerror or exc}"
            ) from None


class RemoteBasePath:
    """Lists one model's base path in a store; remembers an outage to log it sparingly and to
    wait longer between listings."""

    def __init__(self, model: str, storage: ModelStorage, clock: Callable[[], float]) -> None:
        self.model = model
        self._storage = storage
        self._clock = clock
        self._failures = 0
        self._retry_at = 0.0
        self._since: float | None = None
        self._next_line_at = 0.0
        self._ever_listed = False
        self.error: StoreError | None = None
        """The failure of the last listing (None once one succeeds)."""
        self._empty = False
        self._ahead: tuple[str, list[ObjectInfo] | StoreError | None] | None = None

    @property
    def missing(self) -> bool:
        """Whether the last listing failed or found nothing under the prefix."""
        return self.error is not None or self._empty

    async def prefetch(self, base_path: str) -> None:
        """List ``base_path`` now, for the next :meth:`poll` of it (the manager lists before it
        takes its lock, so that a store slow to answer holds up nothing else)."""
        self._ahead = (base_path, await self._try(base_path))

    async def poll(self, base_path: str, serving: int) -> dict[int, str] | None:
        """The versions under ``base_path`` (version → its URL); None when the listing failed,
        waits out a back-off or found no object (nothing may change then); the versions in the
        cache when the store has never been reached. ``serving``: how many versions the model
        serves (for the log line). Uses the listing of :meth:`prefetch` when there is one."""
        ahead, self._ahead = self._ahead, None
        outcome = ahead[1] if ahead and ahead[0] == base_path else await self._try(base_path)
        model_url = parse_url(base_path)
        if outcome is None:
            return None
        if isinstance(outcome, StoreError):
            self._failed(outcome, serving)
            if self._ever_listed:
                return None
            cached = self._storage.cache.cached(model_url)
            if cached and not serving:
                log.warning(
                    "%s; serving the cached version(s) %s of %s until it can be listed",
                    outcome, ", ".join(map(str, sorted(cached))), self.model,
                )  # fmt: skip
            return {v: str(model_url.child(str(v))) for v in cached} or None
        self._recovered()
        self._ever_listed = True
        prefix = model_url.key + "/" if model_url.key else ""
        by_version: dict[int, list[ObjectInfo]] = {}
        for obj in outcome:
            head, _, _ = obj.key[len(prefix) :].partition("/")
            if head.isdigit():
                by_version.setdefault(int(head), []).append(obj)
        self._storage.listed(model_url, by_version)
        if not outcome:
            if not self._empty:
                log.warning(
                    "Could not find base path %s for servable %s: no object under it; %s",
                    base_path, self.model,
                    f"its {serving} served version(s) stay" if serving else "it has no version",
                )  # fmt: skip
            self._empty = True
            return None
        self._empty = False
        return {v: str(model_url.child(str(v))) for v in by_version}

    async def _try(self, base_path: str) -> list[ObjectInfo] | StoreError | None:
        """One listing of ``base_path``: its objects, its failure, or None while backing off."""
        if self._clock() < self._retry_at:
            return None
        try:
            return await _list(parse_url(base_path))
        except StoreError as exc:
            return exc

    def _failed(self, error: StoreError, serving: int) -> None:
        now = self._clock()
        self.error = error
        self._failures += 1
        wait_s = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self._failures - 1))
        self._retry_at = now + wait_s * random.uniform(0.5, 1.5)
        if self._since is None:
            self._since = now
        elif now < self._next_line_at:
            return
        self._next_line_at = now + REPEAT_S
        kept = f"its {serving} served version(s) stay" if serving else "it has no version yet"
        lasted = now - self._since
        log.warning(
            "listing the base path of servable %s failed%s: %s; %s",
            self.model, f" for {lasted:.0f} s" if lasted else "", error, kept,
        )  # fmt: skip

    def _recovered(self) -> None:
        if self._since is not None:
            log.info(
                "the base path of servable %s is listed again after %.0f s",
                self.model, self._clock() - self._since,
            )  # fmt: skip
        self._since, self.error, self._failures, self._retry_at = None, None, 0, 0.0


def version_files(where: str, prefix: str, objects: Collection[ObjectInfo]) -> list[VersionFile]:
    """The files of the version at ``where`` (its objects under ``prefix``), folder markers
    left out. FailedPrecondition for a path that would leave the version's folder, and for a
    SavedModel whose ``variables/`` is not there (still being uploaded)."""
    files = []
    for obj in objects:
        path = obj.key[len(prefix) :]
        if not path or path.endswith("/"):
            continue  # a folder marker
        if any(part in ("", ".", "..") for part in path.split("/")):
            raise FailedPrecondition(f"{where} holds an object named {path!r}: not a file path")
        files.append(VersionFile(path, obj))
    paths = {f.path for f in files}
    if paths & set(SAVED_MODEL_FILES) and not any(p.startswith(VARIABLES) for p in paths):
        raise FailedPrecondition(
            f"{where} is incomplete: it has a SavedModel but no {VARIABLES} yet (still being "
            "uploaded?)"
        )
    return files


async def _list(url: ObjectUrl) -> list[ObjectInfo]:
    """Every object under ``url`` (a folder: its key and a slash), in a thread."""
    prefix = url.key + "/" if url.key else ""
    return await off_loop(lambda: store_for(url).list(prefix), "object-store listing")


def _split(version_url: str) -> tuple[ObjectUrl, int]:
    url = parse_url(version_url)
    model_key, _, version = url.key.rpartition("/")
    return ObjectUrl(url.scheme, url.bucket, model_key, url.account), int(version)
