"""Large files travel in chunks between the command line and a real daemon."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memories.config import load_settings
from memories.daemon.launcher import daemon_pid
from memories.errors import IntegrityError, LockedError, NotFoundError
from memories.ipc import IpcClient
from memories.processes import alive
from memories.views.encoding import b64u_encode
from tests.memories.cli.conftest import FLOOR_KDF, Memories
from tests.support import wait_for

MIB = 1024 * 1024


@pytest.fixture
def daemon_client(store: Memories) -> Iterator[IpcClient]:
    """A raw IPC connection to the test's daemon, for what the command line never sends."""
    with IpcClient(load_settings().socket_path) as client:
        yield client


def _files(store: Memories) -> list[dict[str, Any]]:
    return list(store.ok("ls", "--kind", "file")["summaries"])


def test_a_20_mib_file_round_trips_byte_identical_in_chunks(
    store: Memories, tmp_path: Path
) -> None:
    payload = os.urandom(20 * MIB + 12345)
    source = tmp_path / "big.bin"
    source.write_bytes(payload)

    saved = store.ok("file", "put", str(source), "--tag", "big")
    view = store.ok("show", saved["short_id"])
    assert view["file"]["size"] == len(payload)

    target = tmp_path / "out" / "copy.bin"
    target.parent.mkdir()
    got = store.ok("file", "get", saved["short_id"], "-o", str(target))
    assert got == {
        "name": "big.bin",
        "media_type": "application/octet-stream",
        "size": len(payload),
        "path": str(target),
    }
    assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(payload).digest()
    assert target.read_bytes() == payload
    assert target.stat().st_mode & 0o777 == 0o600
    # Written beside the destination and renamed: no temporary file is left behind.
    assert os.listdir(target.parent) == ["copy.bin"]

    # One read intent for the whole download, however many chunks it took.
    reads = [e for e in _audit(store) if e["details"].get("op") == "file_download"]
    assert len(reads) == 1 and reads[0]["details"]["asset"] == saved["asset"]


def test_a_file_over_max_file_mib_is_refused_before_any_bytes_are_sent(
    store: Memories, tmp_path: Path
) -> None:
    source = tmp_path / "huge.bin"
    source.write_bytes(os.urandom(2 * MIB))
    # The command line's own limit refuses it without asking the daemon.
    refused = store.fails(2, "file", "put", str(source), env={"MEMORIES_MAX_FILE_MIB": "1"})
    assert refused["code"] == "invalid_input"
    assert "2.0 MiB" in refused["message"] and "1 MiB" in refused["message"]
    assert "max_file_mib" in refused["message"]
    assert _files(store) == []


def test_the_daemon_refuses_an_upload_larger_than_its_limit_at_the_start(
    memories: Memories, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The daemon inherits a 1 MiB limit; the command line is told 8 MiB, so only the
    # daemon's check at file_upload_start (which carries no file bytes) can refuse it.
    monkeypatch.setenv("MEMORIES_MAX_FILE_MIB", "1")
    assert memories("init", *FLOOR_KDF, "--json").code == 0
    source = tmp_path / "two.bin"
    source.write_bytes(os.urandom(2 * MIB))
    refused = memories.fails(2, "file", "put", str(source), env={"MEMORIES_MAX_FILE_MIB": "8"})
    assert refused["code"] == "invalid_input"
    assert "the limit is 1 MiB" in refused["message"]
    assert _files(memories) == []


def test_a_tampered_digest_is_refused_and_nothing_is_stored(
    store: Memories, daemon_client: IpcClient
) -> None:
    data = os.urandom(300_000)
    opened = daemon_client.call({"op": "file_upload_start", "name": "t.bin", "size": len(data)})
    upload = opened["upload"]
    assert opened["chunk_bytes"] == 4 * MIB
    daemon_client.call(
        {"op": "file_upload_chunk", "upload": upload, "offset": 0, "data": b64u_encode(data)}
    )
    wrong = "sha256:" + hashlib.sha256(data + b"x").hexdigest()
    with pytest.raises(IntegrityError, match="do not match"):
        daemon_client.call({"op": "file_upload_finish", "upload": upload, "sha256": wrong})
    assert _files(store) == []
    # The upload is gone: the right digest cannot rescue it.
    right = "sha256:" + hashlib.sha256(data).hexdigest()
    with pytest.raises(NotFoundError, match="not open"):
        daemon_client.call({"op": "file_upload_finish", "upload": upload, "sha256": right})
    failures = [e for e in _audit(store) if e["action"] == "file_upload_finish.failed"]
    assert sorted(f["details"]["code"] for f in failures) == ["integrity", "not_found"]


def test_an_upload_abandoned_by_lock_leaves_nothing(
    store: Memories, daemon_client: IpcClient
) -> None:
    data = os.urandom(5 * MIB)
    opened = daemon_client.call({"op": "file_upload_start", "name": "a.bin", "size": len(data)})
    upload = opened["upload"]
    half = data[: 4 * MIB]
    received = daemon_client.call(
        {"op": "file_upload_chunk", "upload": upload, "offset": 0, "data": b64u_encode(half)}
    )
    assert received == {"received": len(half)}

    store.ok("lock")
    rest = {
        "op": "file_upload_chunk",
        "upload": upload,
        "offset": len(half),
        "data": b64u_encode(data[len(half) :]),
    }
    with pytest.raises(LockedError):
        daemon_client.call(rest)
    store.ok("unlock")
    with pytest.raises(NotFoundError, match="dropped at lock"):
        daemon_client.call(rest)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with pytest.raises(NotFoundError):
        daemon_client.call({"op": "file_upload_finish", "upload": upload, "sha256": digest})
    assert _files(store) == []


def test_a_download_cut_short_leaves_no_partial_file(
    store: Memories, daemon_client: IpcClient, tmp_path: Path
) -> None:
    source = tmp_path / "s.bin"
    source.write_bytes(os.urandom(5 * MIB))
    saved = store.ok("file", "put", str(source))
    opened = daemon_client.call({"op": "file_download_start", "ref": saved["asset"]})
    assert opened["size"] == 5 * MIB
    assert opened["sha256"] == "sha256:" + hashlib.sha256(source.read_bytes()).hexdigest()
    first = daemon_client.call(
        {"op": "file_download_chunk", "download": opened["download"], "offset": 0}
    )
    assert first["done"] is False
    store.ok("lock")
    store.ok("unlock")
    with pytest.raises(NotFoundError):
        daemon_client.call(
            {"op": "file_download_chunk", "download": opened["download"], "offset": 4 * MIB}
        )
    # And an existing destination stays untouched when the command refuses.
    out = tmp_path / "out"
    out.mkdir()
    target = out / "keep.bin"
    target.write_bytes(b"keep me")
    refused = store.fails(1, "file", "get", saved["short_id"], "-o", str(target))
    assert refused["code"] == "conflict"
    assert target.read_bytes() == b"keep me"
    assert os.listdir(out) == ["keep.bin"]


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(MIB):
            digest.update(block)
    return digest.hexdigest()


def _staged_rows() -> int:
    """Rows of uploads in progress in the store file (kind 2), read beside the daemon."""
    conn = sqlite3.connect(f"file:{load_settings().store_path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM state WHERE kind = 2").fetchone()[0])
    finally:
        conn.close()


def test_a_64_mib_file_round_trips_through_the_command_line(
    store: Memories, tmp_path: Path
) -> None:
    source = tmp_path / "max.bin"
    with source.open("wb") as handle:
        for _ in range(64):
            handle.write(os.urandom(MIB))
    assert load_settings().max_file_mib == 64
    saved = store.ok("file", "put", str(source))
    assert store.ok("show", saved["short_id"])["file"]["size"] == 64 * MIB
    target = tmp_path / "copy.bin"
    assert store.ok("file", "get", saved["short_id"], "-o", str(target))["size"] == 64 * MIB
    assert _sha256_of(target) == _sha256_of(source)
    assert store.ok("verify")["ok"] is True
    assert _staged_rows() == 0


def test_a_daemon_killed_mid_upload_leaves_no_file_and_no_orphan_blobs(
    store: Memories, daemon_client: IpcClient
) -> None:
    data = os.urandom(9 * MIB)
    opened = daemon_client.call({"op": "file_upload_start", "name": "k.bin", "size": len(data)})
    for offset in (0, 4 * MIB):
        part = data[offset : offset + 4 * MIB]
        chunk = {"op": "file_upload_chunk", "upload": opened["upload"], "offset": offset}
        daemon_client.call({**chunk, "data": b64u_encode(part)})
    # The 256 KiB chunks are on disk already, sealed and staged, not in the daemon's memory
    # (all but chunk 0, which holds the document and is sealed at the finish).
    assert _staged_rows() == 8 * 4 - 1
    pid = daemon_pid(load_settings())
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), timeout=10)
    assert _staged_rows() == 8 * 4 - 1  # what the kill left behind

    assert store.ok("unlock")["unlocked"] is True  # a fresh daemon, started on demand
    assert _staged_rows() == 0
    assert _files(store) == []
    report = store.ok("verify")
    assert report["ok"] is True and report["problems"] == []


def test_a_cancelled_upload_leaves_nothing_on_disk(
    store: Memories, daemon_client: IpcClient
) -> None:
    data = os.urandom(5 * MIB)
    opened = daemon_client.call({"op": "file_upload_start", "name": "c.bin", "size": len(data)})
    chunk = {"op": "file_upload_chunk", "upload": opened["upload"], "offset": 0}
    daemon_client.call({**chunk, "data": b64u_encode(data[: 4 * MIB])})
    assert _staged_rows() > 0
    assert daemon_client.call({"op": "file_upload_cancel", "upload": opened["upload"]}) == {
        "cancelled": True
    }
    assert _staged_rows() == 0
    assert _files(store) == []
    assert store.ok("verify")["ok"] is True


def _audit(store: Memories) -> list[dict[str, Any]]:
    return list(store.ok("audit", "-n", "50")["entries"])
