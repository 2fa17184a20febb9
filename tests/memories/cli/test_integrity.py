"""Integrity through the console script: verify, key rotation, rollback refusal and acceptance,
and damaged audit entries shown in place."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from memories.config import load_settings
from tests.memories.cli.conftest import PASSWORD, Memories, stop_daemon

BODY = "The staging database password rotates on Mondays"
NEW_PASSWORD = "a brand new passphrase"
BLOB_KIND = 1  # the state table's kind for blobs (docs/FORMATS.md, memories store file)


def _store_path() -> Path:
    return load_settings().store_path


@contextmanager
def _raw_store() -> Iterator[sqlite3.Connection]:
    """The store file opened with plain SQLite (the daemon must be stopped)."""
    with closing(sqlite3.connect(_store_path())) as conn, conn:
        yield conn


def _flip_byte_of_every_blob() -> int:
    with _raw_store() as conn:
        rows = conn.execute("SELECT id, value FROM state WHERE kind = ?", (BLOB_KIND,)).fetchall()
        for row_id, value in rows:
            damaged = bytearray(value)
            damaged[len(damaged) // 2] ^= 0x01
            conn.execute(
                "UPDATE state SET value = ? WHERE kind = ? AND id = ?",
                (bytes(damaged), BLOB_KIND, row_id),
            )
    return len(rows)


def _store_files() -> list[Path]:
    path = _store_path()
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def test_verify_passes_a_healthy_store_and_names_a_damaged_blob_without_content(
    store: Memories,
) -> None:
    store.ok("put", BODY, "--title", "staging")
    healthy = store.ok("verify")
    assert healthy["ok"] is True and healthy["problems"] == []
    assert healthy["checked"]["assets"] >= 1 and healthy["checked"]["revisions"] >= 1
    human = store("verify")
    assert human.code == 0, human.stderr
    assert "nothing is damaged" in human.stdout
    assert "checked" in human.stdout

    stop_daemon()
    assert _flip_byte_of_every_blob() > 0
    assert store.ok("unlock")["unlocked"] is True  # unlock does not read blobs

    damaged = store("verify", "--json")
    assert damaged.code == 1, damaged.stderr
    report = damaged.json()
    assert report["ok"] is False
    blobs = [p for p in report["problems"] if p["scope"] == "store" and p["kind"] == "blob"]
    assert blobs, report
    assert all(p["where"] and p["message"] for p in blobs)
    human = store("verify")
    assert human.code == 1
    assert "DAMAGE FOUND" in human.stdout
    assert "blob" in human.stdout
    for text in (damaged.stdout, human.stdout, human.stderr):
        assert "staging database" not in text and "Mondays" not in text
        assert PASSWORD not in text


def test_rotating_the_key_keeps_the_content_and_the_new_password_unlocks(
    store: Memories,
) -> None:
    saved = store.ok("put", BODY, "--title", "staging")
    # Not elevated yet: passwd elevates with the current password for the one request.
    rotated = store(
        "passwd",
        "--rotate-key",
        "--new-password",
        "--json",
        env={"MEMORIES_NEW_PASSWORD": NEW_PASSWORD},
    )
    assert rotated.code == 0, rotated.stderr
    assert rotated.json()["rotated"] is True
    assert NEW_PASSWORD not in rotated.stdout + rotated.stderr

    assert store.ok("lock") == {"locked": True}
    refused = store.fails(3, "unlock")  # MEMORIES_PASSWORD still holds the old password
    assert refused["code"] == "denied"
    assert store.ok("unlock", env={"MEMORIES_PASSWORD": NEW_PASSWORD})["unlocked"] is True
    assert store.ok("show", saved["short_id"])["body"] == BODY
    assert store.ok("verify")["ok"] is True
    actions = [e["action"] for e in store.ok("audit", "-n", "5")["entries"]]
    assert "store.master_rotated" in actions


def test_rotating_the_key_alone_keeps_the_password(store: Memories) -> None:
    rotated = store("passwd", "--rotate-key", "--password-stdin", input=PASSWORD + "\n")
    assert rotated.code == 0, rotated.stderr
    assert "master key rotated" in rotated.stdout
    assert "password is unchanged" in rotated.stdout
    assert store.ok("lock") == {"locked": True}
    assert store.ok("unlock")["unlocked"] is True


def test_a_new_password_in_the_environment_needs_new_password_to_count(
    store: Memories,
) -> None:
    error = store.fails(2, "passwd", "--rotate-key", env={"MEMORIES_NEW_PASSWORD": NEW_PASSWORD})
    assert "--new-password" in error["message"]
    assert NEW_PASSWORD not in error["message"]


def test_an_older_copy_of_the_store_is_refused_until_the_rollback_is_accepted(
    store: Memories, tmp_path: Path
) -> None:
    store.ok("put", "written before the copy", "--title", "before")
    stop_daemon()
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in _store_files():
        if path.exists():
            shutil.copy2(path, copy / path.name)

    store.ok("unlock")
    store.ok("put", "written after the copy", "--title", "after")
    stop_daemon()
    for path in _store_files():
        path.unlink(missing_ok=True)
    for saved in copy.iterdir():
        shutil.copy2(saved, _store_path().with_name(saved.name))

    refused = store.fails(1, "unlock")
    assert refused["code"] == "integrity"
    assert "--accept-rollback" in refused["message"]
    assert "audit trail" in refused["message"]
    human = store("unlock")
    assert human.code == 1
    assert "--accept-rollback opens the store as this file holds it" in human.stderr
    assert store.fails(3, "ls")["code"] == "locked"

    accepted = store("unlock", "--accept-rollback")
    assert accepted.code == 0, accepted.stderr
    assert "ROLLBACK ACCEPTED" in accepted.stdout
    assert "older" in accepted.stdout
    assert "store.rollback_accepted" in accepted.stdout

    titles = [s["title"] for s in store.ok("ls")["summaries"]]
    assert titles == ["before"]
    entries = store.ok("audit", "-n", "3")["entries"]
    assert entries[0]["action"] == "store.rollback_accepted"
    assert "older" in entries[0]["details"]["reasons"]
    shown = store("audit", "-n", "3")
    assert shown.code == 0
    assert "store.rollback_accepted" in shown.stdout.splitlines()[3]  # the first row

    # Accepted once: the anchors now vouch for the store as it is.
    store.ok("lock")
    assert store.ok("unlock")["accepted"] == []


def test_a_missing_audit_entry_is_shown_in_place_and_fails_verification(
    store: Memories,
) -> None:
    for number in range(3):
        store.ok("put", f"note {number}", "--title", f"note {number}")
    stop_daemon()
    with _raw_store() as conn:
        (newest,) = conn.execute("SELECT max(seq) FROM checkpoints").fetchone()
        conn.execute("DELETE FROM checkpoints WHERE seq = ?", (newest - 2,))
    assert store.ok("unlock")["unlocked"] is True

    listed = store.ok("audit", "-n", "20")["entries"]
    gaps = [e for e in listed if e.get("problem") == "gap"]
    assert len(gaps) == 1 and gaps[0]["seq"] == newest - 2
    human = store("audit", "-n", "20")
    assert human.code == 0, human.stderr
    assert "GAP" in human.stdout
    assert "cannot be vouched for" in human.stdout

    report = store("verify", "--json")
    assert report.code == 1
    kinds = {(p["scope"], p["kind"]) for p in report.json()["problems"]}
    assert ("store", "checkpoint") in kinds


def test_a_damaged_store_is_not_rotated_and_keeps_its_password(store: Memories) -> None:
    store.ok("put", BODY, "--title", "staging")
    stop_daemon()
    _flip_byte_of_every_blob()
    store.ok("unlock")
    error = store.fails(
        1,
        "passwd",
        "--rotate-key",
        "--new-password",
        env={"MEMORIES_NEW_PASSWORD": NEW_PASSWORD},
    )
    assert error["code"] == "integrity"
    assert "nothing changed" in error["message"] and "memories verify" in error["message"]
    store.ok("lock")
    assert store.ok("unlock")["unlocked"] is True  # still the old password
