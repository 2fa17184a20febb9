"""Intent batches sealed under the caller's lock and written outside it, beside other work."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memories.errors import DeniedError, UsageError
from memories.store import Store
from tests.memories.store.support import (
    DEADLINE,
    PASSWORD,
    WatchedLock,
    gated_commits,
    new_store,
    put,
    unlocked,
)

INTENTS = [("read.intent", {"n": i}) for i in range(3)]


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return new_store(tmp_path / "memories.db", entries={"seed": b"x"})


def _watch(store: Store) -> WatchedLock:
    """Let the test see another thread ask for the store's I/O lock."""
    watched = WatchedLock(store._io, owner=threading.get_ident())
    store._io = watched  # type: ignore[assignment]
    return watched


def _commit_in_thread(store: Store, key: str) -> tuple[threading.Thread, list[int]]:
    seqs: list[int] = []
    thread = threading.Thread(target=lambda: seqs.append(put(store, key, b"value")))
    thread.start()
    return thread, seqs


def test_a_commit_that_arrives_during_an_intent_write_lands_after_it(store_path: Path) -> None:
    with unlocked(store_path) as store:
        before = store.seq
        watched = _watch(store)
        staged = store.stage_intents(INTENTS)
        committer, committed = _commit_in_thread(store, "k-during")
        assert watched.contended.wait(DEADLINE)
        with staged:
            assert staged.write() == [before + 1, before + 2, before + 3]
        committer.join(DEADLINE)
        assert committed == [before + 4]
        assert store.verify_all() == []
        actions = [c.action for c in store.checkpoints(limit=4)]
        assert actions == ["test.put", "read.intent", "read.intent", "read.intent"]
    with unlocked(store_path) as reopened:  # the chain, root and anchors agree on disk
        assert reopened.seq == before + 4
        assert reopened.get("k-during") == b"value"


def test_an_intent_batch_that_fails_changes_nothing_and_the_store_goes_on(
    store_path: Path,
) -> None:
    with unlocked(store_path) as store:
        before = store.seq
        with gated_commits(store) as gate:
            watched = _watch(store)
            gate.arm(fail=True)
            gate.release.set()
            staged = store.stage_intents(INTENTS)
            committer, committed = _commit_in_thread(store, "k-after")
            assert watched.contended.wait(DEADLINE)
            with staged, pytest.raises(DeniedError, match="delivery denied"):
                staged.write()
            committer.join(DEADLINE)
        assert committed == [before + 1]  # built on the root that is on disk
        assert store.seq == before + 1
        assert store.record_intents(INTENTS[:1]) == [before + 2]
        assert store.verify_all() == []
        # Of the failed batch nothing landed: only the put and the later intent follow it.
        assert [c.action for c in store.checkpoints(limit=2)] == ["read.intent", "test.put"]
    with unlocked(store_path) as reopened:
        assert reopened.seq == before + 2
        assert reopened.get("k-after") == b"value"


def test_blobs_are_read_while_an_intent_batch_is_being_written(store_path: Path) -> None:
    with unlocked(store_path) as store:
        put(store, "blob", b"written once", blob=True)
        before = store.seq
        written: list[int] = []
        with gated_commits(store) as gate:
            gate.arm()

            def flush() -> None:
                with store.stage_intents(INTENTS[:1]) as staged:
                    written.extend(staged.write())

            flusher = threading.Thread(target=flush)
            flusher.start()
            assert gate.reached.wait(DEADLINE)  # inside the transaction, before its COMMIT
            assert store.get_blob("blob") == b"written once"
            assert store.has_blob("blob")
            assert store.seq == before  # memory follows only a durable write
            gate.release.set()
            flusher.join(DEADLINE)
        assert written == [before + 1]
        assert store.seq == before + 1


def test_a_lock_waits_for_the_intent_batch_being_written(store_path: Path) -> None:
    with unlocked(store_path) as store:
        before = store.seq
        written: list[int] = []
        with gated_commits(store) as gate:
            gate.arm()

            def flush() -> None:
                with store.stage_intents(INTENTS[:2]) as staged:
                    written.extend(staged.write())

            flusher = threading.Thread(target=flush)
            flusher.start()
            assert gate.reached.wait(DEADLINE)
            assert flusher.ident is not None
            watched = WatchedLock(store._io, owner=flusher.ident)
            store._io = watched  # type: ignore[assignment]
            locker = threading.Thread(target=store.lock)
            locker.start()
            assert watched.contended.wait(DEADLINE)
            assert store.unlocked  # the lock is still waiting for the write
            gate.release.set()
            flusher.join(DEADLINE)
            locker.join(DEADLINE)
        assert written == [before + 1, before + 2]
        assert not store.unlocked
        store.unlock(PASSWORD)  # the anchors were advanced before the keys were wiped
        assert store.seq == before + 2
        assert store.verify_all() == []


def test_an_empty_intent_batch_is_refused_and_holds_nothing(store_path: Path) -> None:
    with unlocked(store_path) as store:
        with pytest.raises(UsageError):
            store.stage_intents([])
        assert store.record_intents([]) == []
        before = store.seq
        assert put(store, "k", b"v") == before + 1  # the I/O lock was not kept


def test_a_staged_batch_is_written_once(store_path: Path) -> None:
    with unlocked(store_path) as store:
        with store.stage_intents(INTENTS[:1]) as staged:
            staged.write()
            with pytest.raises(DeniedError):
                staged.write()
        assert store.verify_all() == []
