"""Commit observers: every mutation tells the subscribers exactly what it changed, after the
commit is durable, and an observer's failure never reaches the commit."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from memories.errors import ConflictError, LockedError, UsageError
from memories.vault import AssetChange, CommitEvent, FilePayload, Vaults, make_content
from memories.vault.events import Observers
from memories.vault.operations import load_policy
from memories.vault.revision import seal_revision
from tests.memories.vault.support import new_vault_store, opened, refused

TITLE_SENTINEL = "Observer title sentinel 5d"


@pytest.fixture
def vaults(tmp_path: Path) -> Iterator[Vaults]:
    with opened(new_vault_store(tmp_path / "memories.db")) as v:
        yield v


@pytest.fixture
def events(vaults: Vaults) -> Iterator[list[CommitEvent]]:
    seen: list[CommitEvent] = []
    unsubscribe = vaults.subscribe(seen.append)
    yield seen
    unsubscribe()


def only(events: list[CommitEvent]) -> CommitEvent:
    """The single event since the last call, which it clears."""
    assert len(events) == 1, f"expected one event, got {len(events)}"
    return events.pop()


def test_every_mutation_notifies_exactly_the_assets_it_changed(
    vaults: Vaults, events: list[CommitEvent]
) -> None:
    personal = vaults.resolve_vault(None).vault_id

    made = vaults.create_vault("work")
    assert only(events) == CommitEvent(
        vaults.store.seq, "vault.create", frozenset({made.id}), (), policies_changed=True
    )

    defined = vaults.define_card_type("work", "recipe", [{"name": "servings", "type": "integer"}])
    assert only(events) == CommitEvent(
        vaults.store.seq, "card_type.define", frozenset({made.id}), (), policies_changed=False
    )
    assert defined.name == "recipe"

    memory = vaults.put(None, "memory", title="Plan", body="v1")
    assert only(events) == CommitEvent(
        vaults.store.seq,
        "asset.put",
        frozenset({personal}),
        (AssetChange(memory.asset_id, personal, "memory", memory.revision),),
        policies_changed=False,
    )

    updated = vaults.update(memory.asset_id, body="v2")
    event = only(events)
    assert (event.action, event.assets) == (
        "asset.update",
        (AssetChange(memory.asset_id, personal, "memory", updated.revision),),
    )

    # A deliberate fork, then its resolution.
    forked = vaults.update(memory.asset_id, base=memory.revision, fork=True, body="v2b")
    assert only(events).assets == (
        AssetChange(memory.asset_id, personal, "memory", forked.revision),
    )
    resolved = vaults.resolve(memory.asset_id, body="merged")
    event = only(events)
    assert (event.action, event.assets) == (
        "asset.resolve",
        (AssetChange(memory.asset_id, personal, "memory", resolved.revision),),
    )

    deleted = vaults.tombstone(memory.asset_id)
    event = only(events)
    assert (event.action, event.asset_ids, event.assets[0].revision) == (
        "asset.tombstone",
        frozenset({memory.asset_id}),
        deleted.revision,
    )

    a = vaults.put(None, "card", title="A", card_type="knowledge").asset_id
    b = vaults.put(None, "card", title="B", card_type="knowledge").asset_id
    events.clear()
    vaults.link(a, b, "depends_on")
    assert only(events) == CommitEvent(
        vaults.store.seq,
        "link.add",
        frozenset({personal}),
        (AssetChange(a, personal, "card", None),),  # the source record alone; no revision
        policies_changed=False,
    )
    vaults.unlink(a, b)
    event = only(events)
    assert (event.action, event.assets) == (
        "link.remove",
        (AssetChange(a, personal, "card", None),),
    )

    file = vaults.put(
        "work",
        "file",
        title="conf",
        file=FilePayload("nginx.conf", "text/plain", b"worker_processes 1;\n"),
    )
    assert only(events).assets == (AssetChange(file.asset_id, made.id, "file", file.revision),)


def test_an_accepted_revision_notifies_its_asset(vaults: Vaults, events: list[CommitEvent]) -> None:
    first = vaults.put(None, "memory", title="Plan", body="v1")
    record = vaults.resolve_vault(None)
    revision, chunks = seal_revision(
        vaults.identity,
        vault_id=record.vault_id,
        asset_id=first.asset_id,
        kind="memory",
        parents=(first.revision,),
        policy=load_policy(vaults.store, record),
        epoch_key=record.keys[record.epoch],
        content=make_content("memory", title="Plan", body="from elsewhere"),
    )
    events.clear()
    accepted = vaults.accept(revision.to_bytes(), chunks)
    assert only(events) == CommitEvent(
        vaults.store.seq,
        "revision.accept",
        frozenset({record.vault_id}),
        (AssetChange(first.asset_id, record.vault_id, "memory", accepted),),
        policies_changed=False,
    )
    # Accepting it again changes nothing and tells nobody.
    assert vaults.accept(revision.to_bytes(), chunks) == accepted
    assert events == []


def test_refused_operations_notify_nobody(vaults: Vaults, events: list[CommitEvent]) -> None:
    saved = vaults.put(None, "memory", title="Plan", body="v1")
    vaults.update(saved.asset_id, body="v2")
    events.clear()
    refused(vaults, UsageError, lambda: vaults.put(None, "memory", title=""))
    refused(vaults, ConflictError, lambda: vaults.update(saved.asset_id, base=saved.revision))
    refused(vaults, UsageError, lambda: vaults.resolve(saved.asset_id))
    refused(vaults, ConflictError, lambda: vaults.create_vault("personal"))
    refused(vaults, UsageError, lambda: vaults.link(saved.asset_id, saved.asset_id))
    assert events == []


def test_observers_run_after_the_commit_is_durable_and_can_read_it(vaults: Vaults) -> None:
    read_back: list[tuple[int, str]] = []

    def observer(event: CommitEvent) -> None:
        [change] = event.assets
        view = vaults.get(change.asset_id)  # the committed state is visible to the observer
        assert view.content is not None
        read_back.append((vaults.store.seq, view.content.title))

    vaults.subscribe(observer)
    vaults.put(None, "memory", title="Durable", body="yes")
    assert read_back == [(vaults.store.seq, "Durable")]


def test_a_failing_observer_neither_fails_the_commit_nor_stops_the_others(
    vaults: Vaults, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def broken(event: CommitEvent) -> None:
        calls.append("broken")
        raise RuntimeError(f"failed while indexing {TITLE_SENTINEL}")

    vaults.subscribe(broken)
    vaults.subscribe(lambda event: calls.append("after"))
    with caplog.at_level(logging.ERROR, logger="memories.vault.events"):
        saved = vaults.put(None, "memory", title=TITLE_SENTINEL, body="b")
    assert calls == ["broken", "after"]
    assert vaults.get(saved.asset_id).revision == saved.revision
    assert [r.getMessage() for r in caplog.records] == ["a commit observer failed (RuntimeError)"]
    assert TITLE_SENTINEL not in caplog.text


def test_unsubscribing_stops_notifications_and_is_idempotent(vaults: Vaults) -> None:
    seen: list[CommitEvent] = []
    first = vaults.subscribe(seen.append)
    second = vaults.subscribe(seen.append)  # the same callback twice: two subscriptions
    vaults.put(None, "memory", title="one")
    assert len(seen) == 2
    first()
    first()
    vaults.put(None, "memory", title="two")
    assert len(seen) == 3
    second()
    vaults.put(None, "memory", title="three")
    assert len(seen) == 3


def test_closing_drops_every_observer_and_refuses_further_use(vaults: Vaults) -> None:
    seen: list[CommitEvent] = []
    vaults.subscribe(seen.append)
    vaults.close()
    with pytest.raises(LockedError):
        vaults.put(None, "memory", title="after close")
    assert seen == []


def test_observers_registry_counts_and_clears() -> None:
    observers = Observers()
    stop = observers.subscribe(lambda event: None)
    observers.subscribe(lambda event: None)
    assert len(observers) == 2
    stop()
    assert len(observers) == 1
    observers.clear()
    assert len(observers) == 0
