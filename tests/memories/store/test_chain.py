"""The audit chain: a cut end is refused at unlock; anything else is reported in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from memories.errors import IntegrityError
from memories.store import DAMAGED, GAP, UNLINKED, Checkpoint, Store
from tests.memories.store.support import PASSWORD, new_store, put, raw, unlocked

COMMITS = 12  # store.create plus eleven puts


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = new_store(tmp_path / "memories.db")
    with unlocked(path) as store:
        for i in range(COMMITS - 1):
            put(store, f"k{i}", b"v")
    return path


def _flip(path: Path, seq: int) -> None:
    with raw(path) as conn:
        (value,) = conn.execute("SELECT value FROM checkpoints WHERE seq = ?", (seq,)).fetchone()
        damaged = bytearray(value)
        damaged[-3] ^= 0x40
        conn.execute("UPDATE checkpoints SET value = ? WHERE seq = ?", (bytes(damaged), seq))


def _shape(entries: list[Checkpoint]) -> list[tuple[int, str]]:
    return [(c.seq, c.problem) for c in entries]


def test_an_intact_chain_lists_verified_entries(store_path: Path) -> None:
    with unlocked(store_path) as store:
        entries = store.checkpoints()
    assert _shape(entries) == [(seq, "") for seq in range(COMMITS, 0, -1)]
    assert entries[-1].action == "store.create"


def test_one_damaged_old_entry_is_reported_in_place_and_the_rest_listed(
    store_path: Path,
) -> None:
    _flip(store_path, 4)
    with unlocked(store_path) as store:  # the middle of the chain is not read at unlock
        entries = store.checkpoints()
        assert len(store.verify_all()) == 1
    assert _shape(entries) == [(s, DAMAGED if s == 4 else "") for s in range(COMMITS, 0, -1)]
    marker = entries[COMMITS - 4]
    assert marker.action == "checkpoint.damaged" and marker.reason
    assert marker.to_dict()["problem"] == DAMAGED
    assert all(c.action == "test.put" for c in entries[: COMMITS - 1] if c.ok)


def test_deleted_middle_entries_show_as_one_gap(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute("DELETE FROM checkpoints WHERE seq BETWEEN 5 AND 7")
    with unlocked(store_path) as store:
        entries = store.checkpoints()
        problems = store.verify_all()
    assert _shape(entries) == [
        *[(s, "") for s in range(COMMITS, 7, -1)],
        (7, GAP),
        *[(s, "") for s in range(4, 0, -1)],
    ]
    gap = entries[COMMITS - 7]
    assert gap.details["first"] == 5 and gap.details["last"] == 7
    assert "3 audit entries are missing" in gap.reason
    assert [(p.area, p.ref) for p in problems] == [("checkpoint", "5-7")]


def test_a_gap_across_pages_is_reported_once(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute("DELETE FROM checkpoints WHERE seq BETWEEN 5 AND 7")
    with unlocked(store_path) as store:
        listed: list[Checkpoint] = []
        before = None
        while True:
            page = store.checkpoints(limit=4, before=before)
            real = [c for c in page if c.problem != GAP]
            listed += page
            if len(real) < 4:
                break
            before = real[-1].seq
    assert [c.seq for c in listed if c.problem == GAP] == [7]
    assert [c.seq for c in listed if c.problem != GAP] == [12, 11, 10, 9, 8, 4, 3, 2, 1]


def test_a_pruned_prefix_is_refused_at_unlock(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute("DELETE FROM checkpoints WHERE seq <= 3")
    with Store.open(store_path) as store, pytest.raises(IntegrityError, match="oldest audit"):
        store.unlock(PASSWORD)


def test_a_cut_newest_end_is_refused_at_unlock(store_path: Path) -> None:
    with raw(store_path) as conn:
        conn.execute("DELETE FROM checkpoints WHERE seq = ?", (COMMITS,))
    with Store.open(store_path) as store, pytest.raises(IntegrityError, match="newest"):
        store.unlock(PASSWORD)


def test_reordered_entries_are_each_reported(store_path: Path) -> None:
    with raw(store_path) as conn:
        rows = dict(conn.execute("SELECT seq, value FROM checkpoints WHERE seq IN (5, 6)"))
        conn.execute("UPDATE checkpoints SET value = ? WHERE seq = 5", (rows[6],))
        conn.execute("UPDATE checkpoints SET value = ? WHERE seq = 6", (rows[5],))
    with unlocked(store_path) as store:
        entries = store.checkpoints()
        problems = store.verify_all()
    assert [c.seq for c in entries if c.problem] == [6, 5]
    assert {p.ref for p in problems} == {"5", "6"}


def test_an_entry_from_another_copy_is_reported_as_unlinked(store_path: Path) -> None:
    with unlocked(store_path) as store:
        put(store, "main", b"1")
        put(store, "main", b"2")
    with raw(store_path) as conn:
        (value,) = conn.execute("SELECT value FROM checkpoints WHERE seq = 13").fetchone()
    # An entry that decrypts but is not the one its successor chained to: same store and seq,
    # sealed again (as a diverged copy of this store would have it).
    with unlocked(store_path) as store:
        session = store._session
        assert session is not None
        entry = Checkpoint.open(session.keys, 13, value)
        resealed = entry.seal(session.keys)
    with raw(store_path) as conn:
        conn.execute("UPDATE checkpoints SET value = ? WHERE seq = 13", (resealed,))
    with unlocked(store_path) as store:
        entries = store.checkpoints(limit=3)
        problems = store.verify_all()
    assert _shape(entries) == [(14, ""), (13, UNLINKED), (12, "")]
    assert entries[1].action == "test.put", "its own fields are kept"
    assert [(p.area, p.ref) for p in problems] == [("checkpoint", "13-14")]


def test_a_replaced_oldest_entry_is_refused_at_unlock(store_path: Path) -> None:
    with unlocked(store_path) as store:
        session = store._session
        assert session is not None
        first = store.checkpoints(before=2, limit=1)[0]
        resealed = first.seal(session.keys)
    with raw(store_path) as conn:
        conn.execute("UPDATE checkpoints SET value = ? WHERE seq = 1", (resealed,))
    with Store.open(store_path) as store, pytest.raises(IntegrityError, match="oldest audit"):
        store.unlock(PASSWORD)


def test_a_damaged_entry_keeps_its_place_in_a_page(store_path: Path) -> None:
    _flip(store_path, COMMITS - 1)
    with unlocked(store_path) as store:
        page = store.checkpoints(limit=3)
    assert _shape(page) == [(12, ""), (11, DAMAGED), (10, "")]
    assert len([c for c in page if c.ok]) == 2, "a damaged entry counts as a row; gaps do not"


def test_intents_committed_together_chain_and_move_the_anchors(store_path: Path) -> None:
    with unlocked(store_path) as store:
        seqs = store.record_intents([("read.intent", {"asset": "a"}), ("read.intent", {"n": 2})])
        assert seqs == [COMMITS + 1, COMMITS + 2]
        assert all(c.ok for c in store.checkpoints())
        assert store.verify_all() == []
    with unlocked(store_path) as store:  # root, chain ends and both anchors agree
        assert store.seq == COMMITS + 2
