"""Read intents are committed in groups, durable before delivery, and denied together."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from memories.errors import DeniedError, LockedError
from memories.service import Service, parse_request
from memories.service.intents import IntentQueue, Ticket
from memories.store import Store
from tests.memories.service.support import CLI1, call, put

READERS = 8


def audit_actions(service: Service) -> list[str]:
    return [e["action"] for e in call(service, {"op": "audit_list", "limit": 1000})["entries"]]


def test_store_commits_many_intents_as_chained_checkpoints(service: Service) -> None:
    store = service.store
    assert store is not None
    before = store.seq
    seqs = store.record_intents([("read.intent", {"asset": f"a{i}"}) for i in range(5)])
    assert seqs == list(range(before + 1, before + 6))
    assert store.seq == before + 5
    assert store.verify_all() == []
    store.lock()
    store.unlock("service test password")  # the chain and root still bind after a reopen
    assert store.seq == before + 5


def test_intents_filed_while_a_flush_runs_go_out_in_one_batch() -> None:
    queue = IntentQueue()
    lock = threading.RLock()
    batches: list[int] = []
    with lock:
        tickets = [queue.file("read.intent", {"asset": str(i)}) for i in range(READERS)]

    def commit(batch: Sequence[Ticket]) -> None:
        batches.append(len(batch))
        for offset, ticket in enumerate(batch):
            ticket.settle(seq=100 + offset)

    waiters = [
        threading.Thread(target=queue.wait, args=([t],), kwargs={"lock": lock, "commit": commit})
        for t in tickets
    ]
    for thread in waiters:
        thread.start()
    for thread in waiters:
        thread.join(timeout=30)
    assert batches == [READERS]
    assert sorted(t.seq or 0 for t in tickets) == list(range(100, 100 + READERS))


def test_concurrent_reads_each_leave_their_intent_before_delivery(service: Service) -> None:
    saved = put(service, title="shared", body="BODY")
    store = service.store
    assert store is not None
    real = store.record_intents
    batches: list[int] = []

    def counting(items: Sequence[tuple[str, Mapping[str, Any]]]) -> list[int]:
        batches.append(len(items))
        return real(items)

    store.record_intents = counting  # type: ignore[method-assign]
    results: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(10):
                results.append(call(service, {"op": "read", "ref": saved["asset"]}))
        except BaseException as exc:  # surfaced below, in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(READERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert len(results) == 10 * READERS
    assert sum(batches) == 10 * READERS
    assert audit_actions(service).count("read.intent") == 10 * READERS
    assert store.verify_all() == []


def test_a_batch_that_cannot_be_written_denies_every_reader_in_it(service: Service) -> None:
    saved = put(service, title="T", body="B")
    store = service.store
    assert store is not None

    def failing(items: Sequence[tuple[str, Mapping[str, Any]]]) -> list[int]:
        raise DeniedError("delivery denied: the audit record could not be written (disk full)")

    store.record_intents = failing  # type: ignore[method-assign]
    with pytest.raises(DeniedError, match="delivery denied"):
        call(service, {"op": "read", "ref": saved["asset"]})
    del store.record_intents
    assert "read.intent" not in audit_actions(service)


def test_a_lock_before_the_flush_delivers_nothing(service: Service) -> None:
    saved = put(service, title="T", body="B")
    store: Store | None = service.store
    assert store is not None
    real = store.record_intents

    def lock_first(items: Sequence[tuple[str, Mapping[str, Any]]]) -> list[int]:
        service.handle(parse_request({"op": "lock"}), CLI1)  # the idle lock, at the worst moment
        return real(items)

    store.record_intents = lock_first  # type: ignore[method-assign]
    with pytest.raises(LockedError):
        call(service, {"op": "read", "ref": saved["asset"]})
