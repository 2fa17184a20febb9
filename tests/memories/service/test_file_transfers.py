"""Uploads and downloads in chunks through Service.handle: order, limits, owners, expiry, lock."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from memories.config import Settings
from memories.crypto.canonical import b64u_decode, b64u_encode
from memories.errors import (
    BusyError,
    ConflictError,
    DeniedError,
    IntegrityError,
    NotFoundError,
    UsageError,
)
from memories.service import Caller, Service
from memories.service.grants import Grant
from memories.service.requests.files import CHUNK_BYTES, MAX_INLINE_BYTES
from memories.service.transfers import IDLE_SECONDS, MAX_PER_CALLER, MAX_TRANSFERS
from tests.memories.service.support import CLI1, CLI2, FAST, PASSWORD, Clock, call, sudo

MIB = 1024 * 1024
MCP_READ = Caller("mcp:reader", grant=Grant(name="reader", scope="read"))
MCP_WRITE = Caller("mcp:writer", grant=Grant(name="writer", scope="write"))


def _service(settings: Settings, clock: Clock, mib: float) -> Service:
    service = Service(dataclasses.replace(settings, max_file_mib=mib), kdf_cost=FAST, clock=clock)
    call(service, {"op": "init", "password": PASSWORD})
    return service


@pytest.fixture
def small(settings: Settings, clock: Clock) -> Iterator[Service]:
    """A service whose files may be at most 1 MiB."""
    service = _service(settings, clock, 1)
    yield service
    service.close()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _start(service: Service, size: int, caller: Caller = CLI1, **fields: Any) -> str:
    request = {"op": "file_upload_start", "name": "f.bin", "size": size, **fields}
    return str(call(service, request, caller)["upload"])


def _chunk(service: Service, upload: str, offset: int, data: bytes, caller: Caller = CLI1) -> Any:
    request = {"op": "file_upload_chunk", "upload": upload, "offset": offset}
    return call(service, {**request, "data": b64u_encode(data)}, caller)


def _upload(service: Service, data: bytes, caller: Caller = CLI1, **fields: Any) -> Any:
    upload = _start(service, len(data), caller, **fields)
    for offset in range(0, len(data), CHUNK_BYTES):
        _chunk(service, upload, offset, data[offset : offset + CHUNK_BYTES], caller)
    finish = {"op": "file_upload_finish", "upload": upload, "sha256": _digest(data)}
    return call(service, finish, caller)


def _download(
    service: Service, ref: str, caller: Caller = CLI1, length: int = CHUNK_BYTES
) -> bytes:
    opened = call(service, {"op": "file_download_start", "ref": ref}, caller)
    parts, offset, done = [], 0, False
    while not done:
        request = {"op": "file_download_chunk", "download": opened["download"], "offset": offset}
        answer = call(service, {**request, "length": length}, caller)
        assert answer["offset"] == offset
        part = b64u_decode(answer["data"])
        parts.append(part)
        offset += len(part)
        done = answer["done"]
    data = b"".join(parts)
    assert opened["sha256"] == _digest(data) and opened["size"] == len(data)
    return data


def _reads(service: Service) -> list[dict[str, Any]]:
    entries = call(service, {"op": "audit_list", "limit": 100})["entries"]
    return [e["details"] for e in entries if e["action"] == "read.intent"]


def test_chunks_in_order_store_the_file_and_a_download_returns_it(small: Service) -> None:
    data = os.urandom(MIB)
    upload = _start(small, len(data), title="T", tags=["x"])
    assert _chunk(small, upload, 0, data[:1000]) == {"received": 1000}
    with pytest.raises(ConflictError, match="offset 1000"):
        _chunk(small, upload, 0, data[:1000])
    with pytest.raises(ConflictError, match="offset 1000"):
        _chunk(small, upload, 2000, data[2000:3000])
    with pytest.raises(UsageError, match="send the rest"):
        call(small, {"op": "file_upload_finish", "upload": upload, "sha256": _digest(data)})
    assert _chunk(small, upload, 1000, data[1000:]) == {"received": len(data)}
    with pytest.raises(UsageError, match="past the declared size"):
        _chunk(small, upload, len(data), b"x")
    saved = call(small, {"op": "file_upload_finish", "upload": upload, "sha256": _digest(data)})
    view = call(small, {"op": "read", "ref": saved["asset"]})
    assert view["title"] == "T" and view["tags"] == ["x"] and view["file"]["size"] == len(data)
    # Finished means closed.
    with pytest.raises(NotFoundError):
        _chunk(small, upload, len(data), b"x")

    before = len(_reads(small))
    assert _download(small, saved["asset"], length=300_000) == data
    reads = _reads(small)
    # Four chunks, one intent: the one filed when the download opened.
    assert len(reads) == before + 1
    assert reads[0] == {"op": "file_download", "asset": saved["asset"], "caller": "cli:1"}


def test_an_upload_start_checks_everything_but_the_bytes(small: Service) -> None:
    with pytest.raises(UsageError, match="the limit is 1 MiB"):
        _start(small, MIB + 1)
    with pytest.raises(UsageError, match="plain name"):
        call(small, {"op": "file_upload_start", "name": "a/b", "size": 1})
    with pytest.raises(UsageError, match="media type"):
        _start(small, 1, media_type="not a type")
    with pytest.raises(UsageError):
        _start(small, 1, tags=["not a tag!"])
    # None of the refusals holds a slot.
    uploads = [_start(small, 10) for _ in range(MAX_PER_CALLER)]
    assert len(set(uploads)) == MAX_PER_CALLER


def test_an_empty_file_round_trips(small: Service) -> None:
    saved = _upload(small, b"")
    assert _download(small, saved["asset"]) == b""


def test_a_transfer_belongs_to_the_caller_that_opened_it(small: Service) -> None:
    data = os.urandom(5000)
    upload = _start(small, len(data))
    with pytest.raises(NotFoundError):
        _chunk(small, upload, 0, data, CLI2)
    assert call(small, {"op": "file_upload_cancel", "upload": upload}, CLI2) == {"cancelled": False}
    _chunk(small, upload, 0, data)
    saved = call(small, {"op": "file_upload_finish", "upload": upload, "sha256": _digest(data)})
    opened = call(small, {"op": "file_download_start", "ref": saved["asset"]})
    chunk = {"op": "file_download_chunk", "download": opened["download"], "offset": 0}
    with pytest.raises(NotFoundError):
        call(small, chunk, CLI2)
    assert call(small, {"op": "file_download_cancel", "download": opened["download"]}) == {
        "cancelled": True
    }
    with pytest.raises(NotFoundError):
        call(small, chunk)


def test_open_transfers_are_bounded_per_caller_and_in_the_service(small: Service) -> None:
    mine = [_start(small, MIB) for _ in range(MAX_PER_CALLER)]
    with pytest.raises(BusyError, match="finish or cancel one"):
        _start(small, 1)
    # Uploads hold a chunk or two each, not their size: only the count bounds them.
    callers = [Caller(f"cli:{n}") for n in range(2, MAX_TRANSFERS // MAX_PER_CALLER + 1)]
    for caller in callers:
        for _ in range(MAX_PER_CALLER):
            _start(small, MIB, caller)
    with pytest.raises(BusyError, match="other file transfers"):
        _start(small, 1, Caller("cli:99"))
    call(small, {"op": "file_upload_cancel", "upload": mine[0]})
    assert _start(small, 1, Caller("cli:99"))


def test_an_idle_transfer_expires(small: Service, clock: Clock) -> None:
    upload = _start(small, 10)
    clock.advance(IDLE_SECONDS - 1)
    _chunk(small, upload, 0, b"12345")  # a chunk keeps it alive
    clock.advance(IDLE_SECONDS - 1)
    _chunk(small, upload, 5, b"67890")
    clock.advance(IDLE_SECONDS + 1)
    with pytest.raises(NotFoundError, match="expired"):
        call(small, {"op": "file_upload_finish", "upload": upload, "sha256": _digest(b"1" * 10)})


def test_a_wrong_digest_stores_nothing_and_closes_the_upload(small: Service) -> None:
    upload = _start(small, 3)
    _chunk(small, upload, 0, b"abc")
    with pytest.raises(IntegrityError, match="nothing was stored"):
        call(small, {"op": "file_upload_finish", "upload": upload, "sha256": _digest(b"abd")})
    with pytest.raises(NotFoundError):
        call(small, {"op": "file_upload_finish", "upload": upload, "sha256": _digest(b"abc")})
    assert call(small, {"op": "list", "kind": "file"})["summaries"] == []


def test_lock_drops_every_transfer(small: Service) -> None:
    saved = _upload(small, b"kept")
    upload = _start(small, 4)
    opened = call(small, {"op": "file_download_start", "ref": saved["asset"]})
    call(small, {"op": "lock"})
    call(small, {"op": "unlock", "password": PASSWORD})
    with pytest.raises(NotFoundError, match="dropped at lock"):
        _chunk(small, upload, 0, b"gone")
    with pytest.raises(NotFoundError):
        call(small, {"op": "file_download_chunk", "download": opened["download"], "offset": 0})


def test_a_private_file_downloads_only_when_elevated(small: Service) -> None:
    saved = _upload(small, b"secret bytes", private=True)
    with pytest.raises(DeniedError, match="sudo"):
        call(small, {"op": "file_download_start", "ref": saved["asset"]})
    sudo(small)
    assert _download(small, saved["asset"]) == b"secret bytes"


def test_mcp_grants_split_uploads_from_downloads(small: Service) -> None:
    saved = _upload(small, b"shared")
    with pytest.raises(DeniedError, match="write"):
        _start(small, 1, MCP_READ)
    assert _download(small, saved["asset"], MCP_READ) == b"shared"
    with pytest.raises(DeniedError, match="read"):
        call(small, {"op": "file_download_start", "ref": saved["asset"]}, MCP_WRITE)
    assert _upload(small, b"from mcp", MCP_WRITE)["asset"]


def test_file_get_refuses_a_file_too_large_for_one_frame_before_its_intent(
    settings: Settings, clock: Clock
) -> None:
    service = _service(settings, clock, 16)
    try:
        data = os.urandom(MAX_INLINE_BYTES + 1)
        saved = _upload(service, data)
        before = len(_reads(service))
        with pytest.raises(UsageError, match="file_download_start"):
            call(service, {"op": "file_get", "ref": saved["asset"]})
        assert len(_reads(service)) == before
        assert _download(service, saved["asset"]) == data
    finally:
        service.close()


class _FailingCommit:
    """A store connection whose COMMIT fails, as a full or failing disk does."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: object) -> object:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_a_download_whose_intent_cannot_be_written_is_denied_and_holds_nothing(
    small: Service,
) -> None:
    saved = _upload(small, b"FILE-D")
    store = small.store
    assert store is not None
    real = store._conn
    store._conn = _FailingCommit(real)  # type: ignore[assignment]
    try:
        for _ in range(MAX_PER_CALLER):
            with pytest.raises(DeniedError, match="delivery denied"):
                call(small, {"op": "file_download_start", "ref": saved["asset"]})
    finally:
        store._conn = real
    # The denied downloads hold no slots: a full set opens again.
    for _ in range(MAX_PER_CALLER):
        call(small, {"op": "file_download_start", "ref": saved["asset"]})
