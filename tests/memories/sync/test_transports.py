"""Every transport keeps the protocol: put/get/list of immutable, content-addressed objects."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memories.errors import UsageError
from memories.sync.errors import ObjectMissing, TransportError
from memories.sync.transports import (
    FolderTransport,
    MemoryTransport,
    RcloneTransport,
    Transport,
    check_remote,
)
from memories.sync.transports import folder as folder_module
from tests.memories.sync.rclone_server import webdav_server
from tests.support import require_tools


def named(data: bytes, area: str = "objects") -> str:
    return f"{area}/{hashlib.sha256(data).hexdigest()}"


@pytest.fixture(params=["memory", "folder", "rclone"])
def transport(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Transport]:
    if request.param == "memory":
        yield MemoryTransport()
    elif request.param == "folder":
        yield FolderTransport(tmp_path / "shared")
    else:
        with webdav_server(tmp_path / "served") as server:
            yield RcloneTransport(f"{server.remote}memories")


def test_put_then_get_returns_the_exact_bytes(transport: Transport) -> None:
    data = os.urandom(3000) + b"\x00\n"
    transport.put(named(data), data)
    assert transport.get(named(data)) == data
    assert transport.list() == [named(data)]


def test_put_twice_is_harmless_and_listing_holds_both_areas(transport: Transport) -> None:
    one, two = b"first object", b"a descriptor"
    transport.put(named(one), one)
    transport.put(named(one), one)
    transport.put(named(two, "descriptors"), two)
    assert sorted(transport.list()) == sorted([named(one), named(two, "descriptors")])


def test_an_empty_storage_lists_nothing_and_a_missing_object_is_missing(
    transport: Transport,
) -> None:
    assert transport.list() == []
    with pytest.raises(ObjectMissing):
        transport.get(named(b"never stored"))


@pytest.mark.parametrize(
    "name",
    ["objects/../../etc/passwd", "objects/ABC", "-rf", "objects/" + "g" * 64, "other/" + "a" * 64],
)
def test_a_malformed_name_is_refused_before_any_io(transport: Transport, name: str) -> None:
    with pytest.raises(UsageError):
        transport.put(name, b"x")
    with pytest.raises(UsageError):
        transport.get(name)


def test_folder_never_reads_a_partial_file_as_an_object(tmp_path: Path) -> None:
    folder = FolderTransport(tmp_path / "shared")
    data = os.urandom(10_000)
    name = named(data)
    # What a sync client leaves while still copying the file in: the right name, half the bytes.
    (tmp_path / "shared" / "objects").mkdir(parents=True)
    (tmp_path / "shared" / name).write_bytes(data[:4000])
    assert folder.list() == [name]  # listed, as the storage shows it …
    with pytest.raises(ObjectMissing):
        folder.get(name)  # … but not an object until every byte is there
    folder.put(name, data)  # our own copy replaces the partial one atomically
    assert folder.get(name) == data


def test_folder_listing_ignores_temporary_files_and_sync_client_copies(tmp_path: Path) -> None:
    folder = FolderTransport(tmp_path / "shared")
    data = b"object"
    folder.put(named(data), data)
    objects = tmp_path / "shared" / "objects"
    (objects / ".tmp-0123456789abcdef").write_bytes(b"half")
    (objects / f"{hashlib.sha256(data).hexdigest()} (conflicted copy)").write_bytes(data)
    (objects / ".syncthing.x.tmp").write_bytes(b"")
    (objects / "desktop.ini").write_bytes(b"")
    (objects / ("b" * 64)).mkdir()  # a folder under an object name
    assert folder.list() == [named(data)]


def test_folder_put_leaves_no_temporary_file_behind(tmp_path: Path) -> None:
    folder = FolderTransport(tmp_path / "shared")
    for i in range(20):
        data = f"object {i}".encode()
        folder.put(named(data), data)
    leftovers = [p.name for p in (tmp_path / "shared" / "objects").iterdir() if p.name[0] == "."]
    assert leftovers == []


def test_folder_on_a_read_only_path_fails_with_a_transport_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    folder = FolderTransport(blocker / "sub")
    with pytest.raises(TransportError) as caught:
        folder.put(named(b"x"), b"x")
    assert "x" not in caught.value.message.replace(str(blocker), "")
    assert folder.list() == []


def test_rclone_remote_must_be_a_configured_remote() -> None:
    for bad in [
        "",
        "/plain/path",
        ":webdav,url=http://h,pass=secret:",
        "-remote:x",
        "remote:a\nb",
    ]:
        with pytest.raises(UsageError):
            check_remote(bad)
    assert check_remote("my-box:memories/sync") == "my-box:memories/sync"


def test_rclone_with_an_unknown_remote_fails_without_echoing_rclone_output(tmp_path: Path) -> None:
    require_tools("rclone", debian="rclone")
    transport = RcloneTransport("nosuchremote:memories")
    with pytest.raises(TransportError) as caught:
        transport.put(named(b"x"), b"x")
    assert "nosuchremote" in caught.value.message
    assert "config" not in caught.value.message.lower().replace("rclone lsd", "")


def test_rclone_credentials_stay_in_rclone_config(tmp_path: Path) -> None:
    with webdav_server(tmp_path / "served") as server:
        transport = RcloneTransport(f"{server.remote}memories")
        data = b"sealed bytes"
        transport.put(named(data), data)
        assert transport.description == "rclone testdav:memories"
        assert server.password not in repr(vars(transport))
        assert (server.served / "memories" / named(data)).read_bytes() == data
        # A partially uploaded object on the server is not an object.
        partial = os.urandom(5000)
        (server.served / "memories" / named(partial)).write_bytes(partial[:100])
        with pytest.raises(ObjectMissing):
            transport.get(named(partial))


def test_folder_ignores_an_object_over_the_size_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(folder_module, "MAX_OBJECT_BYTES", 4096)
    folder = FolderTransport(tmp_path / "shared")
    (tmp_path / "shared" / "objects").mkdir(parents=True)
    small, large = os.urandom(4096), os.urandom(4097)
    for data in (small, large):
        (tmp_path / "shared" / named(data)).write_bytes(data)
    assert folder.get(named(small)) == small  # exactly at the bound: read whole
    with pytest.raises(ObjectMissing):
        folder.get(named(large))
