"""verify, rotate_key and unlock --accept-rollback through the service."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from memories.errors import DeniedError, IntegrityError
from memories.service import Service
from tests.memories.service.support import PASSWORD, call, put, sudo


def test_verify_reports_a_healthy_store_with_what_it_checked(service: Service) -> None:
    before = call(service, {"op": "verify"})["checked"]
    put(service, title="one")
    call(service, {"op": "card_put", "title": "card", "card_type": "knowledge"})
    report = call(service, {"op": "verify"})
    assert report["ok"] is True and report["problems"] == []
    checked = report["checked"]
    assert checked["vaults"] == before["vaults"] == 2
    assert checked["assets"] == before["assets"] + 2
    assert checked["revisions"] == before["revisions"] + 2
    assert checked["checkpoints"] == service.store.seq  # type: ignore[union-attr]


def test_verify_names_a_damaged_blob_without_content(service: Service) -> None:
    put(service, title="TITLE-V", body="BODY-V" * 100)
    store = service.store
    assert store is not None
    with sqlite3.connect(store.path) as raw:
        row_id, value = raw.execute(
            "SELECT id, value FROM state WHERE kind != 0 ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        damaged = bytearray(value)
        damaged[-1] ^= 0x01
        raw.execute("UPDATE state SET value = ? WHERE id = ?", (bytes(damaged), row_id))
    report = call(service, {"op": "verify"})
    assert report["ok"] is False
    assert report["problems"]
    text = repr(report)
    assert "BODY-V" not in text and "TITLE-V" not in text
    assert any(p["scope"] == "store" and p["kind"] == "blob" for p in report["problems"])


def test_rotate_key_needs_elevation_and_keeps_every_memory(service: Service) -> None:
    saved = put(service, title="kept", body="across rotation")
    with pytest.raises(DeniedError, match="elevation"):
        call(service, {"op": "rotate_key", "password": PASSWORD})
    sudo(service)
    store = service.store
    assert store is not None
    old_header = _header_rows(store.path)
    answer = call(service, {"op": "rotate_key", "password": PASSWORD, "new_password": "next one"})
    assert answer["rotated"] is True and answer["seq"] == store.seq
    call(service, {"op": "lock"})
    with pytest.raises(DeniedError):
        call(service, {"op": "unlock", "password": PASSWORD})
    call(service, {"op": "unlock", "password": "next one"})
    assert call(service, {"op": "read", "ref": saved["asset"]})["body"] == "across rotation"
    assert call(service, {"op": "verify"})["ok"] is True
    # Putting the pre-rotation key rows back opens nothing.
    call(service, {"op": "lock"})
    _write_header_rows(store.path, {k: old_header[k] for k in ("kdf", "master")})
    with pytest.raises(IntegrityError):
        call(service, {"op": "unlock", "password": PASSWORD})


def test_an_older_copy_of_the_store_opens_only_when_the_rollback_is_accepted(
    service: Service, tmp_path: Path
) -> None:
    store = service.store
    assert store is not None
    path = store.path
    put(service, title="before the copy")
    call(service, {"op": "lock"})
    copies = tmp_path / "copy"
    copies.mkdir()
    for suffix in ("", "-wal"):  # the whole file as a backup tool would take it
        if Path(str(path) + suffix).exists():
            shutil.copy(Path(str(path) + suffix), copies / f"store{suffix}")
    call(service, {"op": "unlock", "password": PASSWORD})
    put(service, title="after the copy")
    call(service, {"op": "lock"})
    service.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    for copied in copies.iterdir():
        shutil.copy(copied, str(path) + copied.name.removeprefix("store"))
    restored = Service(service.settings)
    try:
        with pytest.raises(IntegrityError, match="accept-rollback"):
            call(restored, {"op": "unlock", "password": PASSWORD})
        answer = call(restored, {"op": "unlock", "password": PASSWORD, "accept_rollback": True})
        assert answer["unlocked"] is True and answer["accepted"]
        assert {a["reason"] for a in answer["accepted"]} <= {"older", "diverged", "missing"}
        actions = [e["action"] for e in call(restored, {"op": "audit_list"})["entries"]]
        assert actions[0] == "store.rollback_accepted"
        titles = {s["title"] for s in call(restored, {"op": "list"})["summaries"]}
        assert titles == {"before the copy"}
        call(restored, {"op": "lock"})
        # Accepted once: the anchors now vouch for the state as it is.
        assert call(restored, {"op": "unlock", "password": PASSWORD})["accepted"] == []
    finally:
        restored.close()


def _header_rows(path: Path) -> dict[str, bytes]:
    with sqlite3.connect(path) as raw:
        return {name: bytes(value) for name, value in raw.execute("SELECT name, value FROM header")}


def _write_header_rows(path: Path, rows: dict[str, bytes]) -> None:
    with sqlite3.connect(path) as raw:
        raw.executemany(
            "UPDATE header SET value = ? WHERE name = ?", [(v, k) for k, v in rows.items()]
        )
