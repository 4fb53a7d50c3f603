"""Each store's client against its real wire protocol on loopback (moto, gcp-storage-emulator,
Azurite): listing, downloads checked against the listed tag, and each failure's kind, with
texts that name the bucket and the operation and never a credential."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.storage import stores
from gateway.storage.failures import StoreError
from gateway.storage.urls import ObjectUrl
from tests.support.object_stores import (
    AZURITE_KEY,
    S3_SECRET,
    StoreServer,
    store_server,
)


@pytest.fixture(scope="module", params=["s3", "gs", "az"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StoreServer]:
    with store_server(request.param, tmp_path_factory.mktemp("store")) as running:
        yield running


@pytest.fixture
def open_store(server: StoreServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The store's environment in ``os.environ`` (where each SDK reads it), and a fresh client
    per test."""
    for name, value in server.env.items():
        monkeypatch.setenv(name, value)
    stores.forget_stores()
    yield
    stores.forget_stores()


def test_lists_a_prefix_and_downloads_what_it_listed(
    server: StoreServer, open_store: None, tmp_path: Path
) -> None:
    server.put("listing/m/1/model.onnx", b"x" * 3000)
    server.put("listing/m/1/assets.extra/warmup", b"w")
    server.put("listing/other/1/model.onnx", b"o")
    store = stores.store_for(ObjectUrl(server.scheme, server.bucket))
    found = {o.key: o for o in store.list("listing/m/")}
    assert sorted(found) == ["listing/m/1/assets.extra/warmup", "listing/m/1/model.onnx"]
    obj = found["listing/m/1/model.onnx"]
    assert obj.size == 3000 and obj.tag
    target = tmp_path / "model.onnx"
    assert store.download(obj, str(target), threading.Event()) == 3000
    assert target.read_bytes() == b"x" * 3000
    assert store.read("listing/m/1/assets.extra/warmup") == b"w"


def test_an_object_replaced_since_the_listing_is_not_downloaded(
    server: StoreServer, open_store: None, tmp_path: Path
) -> None:
    server.put("replaced/1/model.onnx", b"old")
    store = stores.store_for(ObjectUrl(server.scheme, server.bucket))
    (listed,) = store.list("replaced/")
    server.put("replaced/1/model.onnx", b"newer")
    with pytest.raises(StoreError) as info:
        store.download(listed, str(tmp_path / "model.onnx"), threading.Event())
    assert info.value.kind == "changed", info.value


def test_a_missing_bucket_is_said_so(server: StoreServer, open_store: None) -> None:
    store = stores.store_for(ObjectUrl(server.scheme, "no-such-bucket"))
    with pytest.raises(StoreError) as info:
        store.list("m/")
    assert info.value.kind == "no_bucket", info.value
    assert str(info.value).startswith(f"list on {server.scheme}://no-such-bucket failed: ")


def test_a_cut_link_is_unreachable_and_comes_back(server: StoreServer, open_store: None) -> None:
    server.put("cut/1/model.onnx", b"m")
    store = stores.store_for(ObjectUrl(server.scheme, server.bucket))
    server.proxy.cut()
    try:
        with pytest.raises(StoreError) as info:
            store.list("cut/")
        assert info.value.kind == "unreachable", info.value
    finally:
        server.proxy.restore()
    assert [o.key for o in store.list("cut/")] == ["cut/1/model.onnx"]


def test_refused_credentials_are_denied_and_never_quoted(
    server: StoreServer, open_store: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if server.scheme != "az":
        pytest.skip("only Azurite checks signatures (moto and the GCS emulator accept any)")
    wrong = AZURITE_KEY[:-8] + "AAAAAAA="
    monkeypatch.setenv(
        "AZURE_STORAGE_CONNECTION_STRING",
        server.env["AZURE_STORAGE_CONNECTION_STRING"].replace(AZURITE_KEY, wrong),
    )
    stores.forget_stores()
    store = stores.store_for(ObjectUrl(server.scheme, server.bucket))
    with pytest.raises(StoreError) as info:
        store.list("m/")
    assert info.value.kind == "denied", info.value
    assert wrong not in str(info.value) and AZURITE_KEY not in str(info.value)
    assert S3_SECRET not in str(info.value)
