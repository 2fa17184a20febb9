"""An older copy of the store never opens silently: both anchors are checked and kept current."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from memories.crypto import associated_data, canonical_bytes, new_key, seal
from memories.errors import IntegrityError, MemoriesError
from memories.store import RollbackError, Store
from memories.store.anchor import ANCHOR_FILE_SIZE, SLOT_SIZE, AnchorFile
from memories.store.records import Root, StoreKeys
from tests.memories.store.support import (
    PASSWORD,
    anchor_paths,
    new_store,
    put,
    raw,
    restore,
    snapshot,
    store_id_of,
    unlocked,
)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = new_store(tmp_path / "data" / "memories.db", entries={"a": b"alpha"})
    with unlocked(path) as store:
        put(store, "b", b"bravo")
    return path


def _refused(path: Path, reason: str) -> RollbackError:
    with Store.open(path) as store, pytest.raises(RollbackError) as caught:
        store.unlock(PASSWORD)
    assert caught.value.reason == reason
    assert "--accept-rollback" in caught.value.message
    assert not store.unlocked
    return caught.value


def _newer_state(path: Path) -> None:
    with unlocked(path) as store:
        put(store, "c", b"charlie")


def test_new_store_has_both_anchors_written_whole(tmp_path: Path) -> None:
    path = new_store(tmp_path / "memories.db")
    local, state = anchor_paths(path)
    assert local.parent == path.parent and state.parent.parent.name == "memories"
    for anchor in (local, state):
        assert anchor.stat().st_size == ANCHOR_FILE_SIZE
        assert oct(anchor.stat().st_mode & 0o777) == oct(0o600)
    assert not [p for p in state.parent.iterdir() if p.name.startswith(".")], "no temporaries"


def test_older_copy_restored_alone_is_refused(store_path: Path, tmp_path: Path) -> None:
    old = snapshot(store_path, tmp_path / "old")
    _newer_state(store_path)
    restore({k: v for k, v in old.items() if not k.name.endswith(".anchor")})
    error = _refused(store_path, "older")
    assert "older than its last recorded commit" in error.message


def test_older_copy_restored_with_its_folder_anchor_is_caught_by_the_state_anchor(
    store_path: Path, tmp_path: Path
) -> None:
    _, state = anchor_paths(store_path)
    old = snapshot(store_path, tmp_path / "old")
    _newer_state(store_path)
    # A copy of the data folder brings back the store and the anchor beside it, not the other.
    restore({k: v for k, v in old.items() if k != state})
    error = _refused(store_path, "older")
    assert "state folder" in error.message


def test_older_copy_with_both_anchors_deleted_is_refused(store_path: Path, tmp_path: Path) -> None:
    old = snapshot(store_path, tmp_path / "old")
    _newer_state(store_path)
    restore(old)
    for anchor in anchor_paths(store_path):
        anchor.unlink()
    _refused(store_path, "missing")


@pytest.mark.parametrize("which", [0, 1], ids=["local", "state"])
def test_a_missing_anchor_is_refused_for_a_store_that_has_committed(
    store_path: Path, which: int
) -> None:
    anchor_paths(store_path)[which].unlink()
    error = _refused(store_path, "missing")
    assert "is missing" in error.message


def _empty(data: bytes) -> bytes:
    return b""


def _truncated(data: bytes) -> bytes:
    return data[: SLOT_SIZE + 10]


def _garbage(data: bytes) -> bytes:
    return os.urandom(len(data))


def _flipped_macs(data: bytes) -> bytes:
    out = bytearray(data)
    for slot in (0, 1):
        out[slot * SLOT_SIZE + 100] ^= 0x01  # inside the MAC of each slot
    return bytes(out)


def _old_format(data: bytes) -> bytes:
    return data[:72]


@pytest.mark.parametrize("which", [0, 1], ids=["local", "state"])
@pytest.mark.parametrize(
    "damage", [_empty, _truncated, _garbage, _flipped_macs, _old_format], ids=lambda f: f.__name__
)
def test_a_damaged_anchor_is_refused_with_a_clear_message(
    store_path: Path, which: int, damage: Callable[[bytes], bytes]
) -> None:
    anchor = anchor_paths(store_path)[which]
    anchor.write_bytes(damage(anchor.read_bytes()))
    error = _refused(store_path, "damaged")
    assert str(anchor) in error.message


def test_another_stores_anchor_in_its_place_is_refused(store_path: Path, tmp_path: Path) -> None:
    other = new_store(tmp_path / "other" / "memories.db")
    local, _ = anchor_paths(store_path)
    shutil.copyfile(anchor_paths(other)[0], local)
    _refused(store_path, "damaged")


def test_deleting_the_wal_and_anchors_after_a_crash_does_not_drop_acknowledged_writes(
    store_path: Path,
) -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        try:
            store = Store.open(store_path)
            store.unlock(PASSWORD)
            put(store, "acknowledged", b"x")
        finally:
            os._exit(0)  # a crash: no close, so the commit lives only in the WAL
    os.waitpid(pid, 0)
    wal = store_path.with_name(store_path.name + "-wal")
    assert wal.stat().st_size > 0
    saved = snapshot(store_path, store_path.parent / "saved")
    wal.unlink()
    store_path.with_name(store_path.name + "-shm").unlink(missing_ok=True)
    _refused(store_path, "older")
    for anchor in anchor_paths(store_path):
        anchor.unlink()
    _refused(store_path, "missing")
    restore(saved)
    with unlocked(store_path) as store:
        assert store.get("acknowledged") == b"x"


def test_anchors_that_are_behind_the_same_history_are_accepted(
    store_path: Path, tmp_path: Path
) -> None:
    behind = snapshot(store_path, tmp_path / "behind", store=False)
    _newer_state(store_path)
    _newer_state(store_path)
    restore(behind)  # what an unsynced anchor write looks like after a power loss
    with unlocked(store_path) as store:
        assert store.get("c") == b"charlie"
        assert store.verify_all() == []


def test_a_torn_slot_reads_as_behind_and_the_next_commit_repairs_it(store_path: Path) -> None:
    local, _ = anchor_paths(store_path)
    with unlocked(store_path) as store:
        put(store, "c", b"charlie")  # both slots now hold a record
    data = bytearray(local.read_bytes())
    seqs = [int.from_bytes(data[s * SLOT_SIZE + 32 : s * SLOT_SIZE + 40], "big") for s in (0, 1)]
    newest = seqs.index(max(seqs))
    older = 1 - newest
    data[older * SLOT_SIZE : older * SLOT_SIZE + 60] = os.urandom(60)  # a half-written sector
    local.write_bytes(bytes(data))
    with unlocked(store_path) as store:
        problems = store.verify_all()
        assert [(p.area, p.ref) for p in problems] == [("anchor", str(local))]
        assert "interrupted write" in problems[0].what
        put(store, "d", b"delta")
        assert store.verify_all() == []


def test_anchors_follow_every_commit_and_never_run_ahead_of_a_failed_one(
    store_path: Path,
) -> None:
    local, state = anchor_paths(store_path)
    with unlocked(store_path) as store:
        before = (local.read_bytes(), state.read_bytes())
        put(store, "c", b"charlie")
        after = (local.read_bytes(), state.read_bytes())
        assert after[0] != before[0] and after[1] != before[1]
        store._conn.execute("PRAGMA query_only = 1")
        with pytest.raises(MemoriesError, match="read-only"):
            put(store, "d", b"delta")
        assert (local.read_bytes(), state.read_bytes()) == after
        store._conn.execute("PRAGMA query_only = 0")
    with unlocked(store_path) as store:
        assert store.get("d") is None


def test_accept_rollback_records_what_was_accepted_and_rewrites_the_anchors(
    store_path: Path, tmp_path: Path
) -> None:
    old = snapshot(store_path, tmp_path / "old")
    _newer_state(store_path)
    _newer_state(store_path)
    restore({k: v for k, v in old.items() if not k.name.endswith(".anchor")})
    _refused(store_path, "older")
    with Store.open(store_path) as store:
        findings = store.unlock(PASSWORD, accept_rollback=True)
        assert {f.reason for f in findings} == {"older"}
        newest = store.checkpoints(limit=1)[0]
        assert newest.action == "store.rollback_accepted"
        assert newest.details == {
            "store_seq": 2,
            "reasons": "older",
            "local_anchor_seq": 4,
            "local_anchor": "older",
            "state_anchor_seq": 4,
            "state_anchor": "older",
        }
        assert store.get("c") is None, "the older state is what was accepted"
        assert store.verify_all() == []
    with unlocked(store_path) as store:  # no flag needed any more
        assert store.seq == 3


def test_accept_rollback_restores_missing_anchors(store_path: Path) -> None:
    for anchor in anchor_paths(store_path):
        anchor.unlink()
    with Store.open(store_path) as store:
        findings = store.unlock(PASSWORD, accept_rollback=True)
        assert sorted(f.anchor for f in findings) == ["local", "state"]
        assert store.checkpoints(limit=1)[0].details["local_anchor_seq"] == -1
    assert all(anchor.exists() for anchor in anchor_paths(store_path))
    with unlocked(store_path) as store:
        assert store.verify_all() == []


def test_accept_rollback_on_a_good_store_changes_nothing(store_path: Path) -> None:
    with Store.open(store_path) as store:
        assert store.unlock(PASSWORD, accept_rollback=True) == ()
        assert store.seq == 2


def test_accept_rollback_does_not_open_tampered_rows(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute("DELETE FROM state WHERE kind = 0")
    for anchor in anchor_paths(store_path):
        anchor.unlink()
    with Store.open(store_path) as store, pytest.raises(IntegrityError) as caught:
        store.unlock(PASSWORD, accept_rollback=True)
    assert not isinstance(caught.value, RollbackError)


def test_a_store_written_before_anchors_existed_opens_and_is_upgraded(
    store_path: Path,
) -> None:
    with Store.open(store_path) as store:
        store.unlock(PASSWORD)
        session = store._session
        assert session is not None
        root = session.root
        legacy = _legacy_root(session.keys, root)
    with raw(store_path) as conn:
        conn.execute("UPDATE header SET value = ? WHERE name = 'root'", (legacy,))
    for anchor in anchor_paths(store_path):
        anchor.unlink()
    with unlocked(store_path) as store:
        assert store.checkpoints(limit=1)[0].action == "store.upgrade"
        assert store.verify_all() == []
    assert all(anchor.exists() for anchor in anchor_paths(store_path))
    for anchor in anchor_paths(store_path):  # from now on the anchors are required
        anchor.unlink()
    _refused(store_path, "missing")


def _legacy_root(keys: StoreKeys, root: Root) -> bytes:
    """The root as the first release sealed it (version 1: no header or chain binding)."""
    body = canonical_bytes(
        {
            "t": "memories.root",
            "v": 1,
            "store": keys.store_id,
            "seq": root.seq,
            "rows": root.rows,
            "digest": f"{root.digest:064x}",
            "checkpoint": root.checkpoint,
        }
    )
    return seal(keys.state, body, associated_data("root", store=keys.store_id))


def test_anchor_check_does_not_trust_a_key_it_cannot_verify(store_path: Path) -> None:
    # An anchor MACed under another key (as a forger without the store's key would make) fails.
    local, _ = anchor_paths(store_path)
    forged = StoreKeys(new_key(), store_id_of(store_path))
    AnchorFile("local", local).create(forged, 1, "")
    _refused(store_path, "damaged")
