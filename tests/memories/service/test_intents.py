"""Read intents are committed in groups, durable before delivery, and denied together."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from memories.errors import DeniedError, LockedError, NotFoundError
from memories.service import Service, parse_request
from memories.service.intents import IntentQueue, Ticket
from memories.store import Store
from memories.store.intents import StagedIntents
from tests.memories.service.support import CLI1, PASSWORD, call, put
from tests.memories.store.support import DEADLINE, WatchedLock, gated_commits

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


def _count_batches(store: Store) -> list[int]:
    """Record the size of every intent batch the store is asked to seal."""
    real = store.stage_intents
    batches: list[int] = []

    def counting(items: Sequence[tuple[str, Mapping[str, Any]]]) -> StagedIntents:
        batches.append(len(items))
        return real(items)

    store.stage_intents = counting  # type: ignore[method-assign]
    return batches


def _in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run ``work`` in a thread; its result, or what it raised, lands in the list."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # surfaced by the test, in its own thread
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_concurrent_reads_each_leave_their_intent_before_delivery(service: Service) -> None:
    saved = put(service, title="shared", body="BODY")
    store = service.store
    assert store is not None
    batches = _count_batches(store)
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
    with gated_commits(store) as gate:
        gate.arm(fail=True)
        gate.release.set()
        with pytest.raises(DeniedError, match="delivery denied"):
            call(service, {"op": "read", "ref": saved["asset"]})
    assert "read.intent" not in audit_actions(service)
    # Memory stayed at what is on disk: reads, writes and a reopen all go on.
    assert call(service, {"op": "read", "ref": saved["asset"]})["body"] == "B"
    put(service, title="after", body="A")
    assert store.verify_all() == []
    call(service, {"op": "lock"})
    call(service, {"op": "unlock", "password": PASSWORD})
    assert audit_actions(service)[:2] == ["asset.put", "read.intent"]


def test_reads_are_computed_while_a_batch_is_being_written(service: Service) -> None:
    saved = put(service, title="T", body="BODY-1")
    store = service.store
    assert store is not None
    batches = _count_batches(store)
    queue = service._core.intents
    filed = threading.Event()
    real_file = queue.file

    def file(action: str, details: Mapping[str, Any]) -> Ticket:
        ticket = real_file(action, details)
        filed.set()
        return ticket

    read = {"op": "read", "ref": saved["asset"]}
    with gated_commits(store) as gate:
        gate.arm()
        first, first_out = _in_thread(lambda: call(service, read))
        assert gate.reached.wait(DEADLINE)  # the first batch is inside its commit
        queue.file = file  # type: ignore[method-assign]
        second, second_out = _in_thread(lambda: call(service, read))
        # The second read took the service lock, decrypted and filed its intent meanwhile.
        assert filed.wait(DEADLINE)
        assert not first_out and not second_out  # neither is delivered before its fsync
        gate.release.set()
        first.join(DEADLINE)
        second.join(DEADLINE)
    for out in (first_out, second_out):
        assert isinstance(out[0], dict) and out[0]["body"] == "BODY-1"
    assert batches == [1, 1]
    assert audit_actions(service)[:2] == ["read.intent", "read.intent"]
    assert store.verify_all() == []


def test_a_write_during_a_batch_lands_after_it_on_one_chain(service: Service) -> None:
    saved = put(service, title="T", body="B")
    store = service.store
    assert store is not None
    with gated_commits(store) as gate:
        gate.arm()
        reader, read_out = _in_thread(lambda: call(service, {"op": "read", "ref": saved["asset"]}))
        assert gate.reached.wait(DEADLINE)
        assert reader.ident is not None
        watched = WatchedLock(store._io, owner=reader.ident)
        store._io = watched  # type: ignore[assignment]
        writer, write_out = _in_thread(lambda: put(service, title="during", body="D"))
        assert watched.contended.wait(DEADLINE)  # the write waits for the batch's commit
        gate.release.set()
        reader.join(DEADLINE)
        writer.join(DEADLINE)
    assert isinstance(read_out[0], dict) and isinstance(write_out[0], dict)
    assert audit_actions(service)[:2] == ["asset.put", "read.intent"]
    assert store.verify_all() == []
    call(service, {"op": "lock"})
    call(service, {"op": "unlock", "password": PASSWORD})  # root, chain and anchors agree
    titles = {s["title"] for s in call(service, {"op": "list"})["summaries"]}
    assert titles == {"T", "during"}


def test_a_lock_during_a_batch_waits_for_it_and_the_answer_is_not_delivered(
    service: Service,
) -> None:
    saved = put(service, title="T", body="B")
    store = service.store
    assert store is not None
    request = parse_request({"op": "read", "ref": saved["asset"]})

    locked = threading.Event()

    def read_and_deliver() -> dict[str, Any]:
        generation, response = service.handle_stamped(request, CLI1)
        # Settled before the lock took the keys; sent only after it: the front end's check.
        assert locked.wait(DEADLINE)
        return service.deliver(generation, response)

    def lock() -> None:
        call(service, {"op": "lock"})
        locked.set()

    with gated_commits(store) as gate:
        gate.arm()
        reader, read_out = _in_thread(read_and_deliver)
        assert gate.reached.wait(DEADLINE)
        assert reader.ident is not None
        watched = WatchedLock(store._io, owner=reader.ident)
        store._io = watched  # type: ignore[assignment]
        locker, _ = _in_thread(lock)
        assert watched.contended.wait(DEADLINE)
        assert store.unlocked  # the keys outlive the write that still needs them
        gate.release.set()
        reader.join(DEADLINE)
        locker.join(DEADLINE)
    assert isinstance(read_out[0], LockedError)
    assert not service.unlocked
    call(service, {"op": "unlock", "password": PASSWORD})
    assert "read.intent" in audit_actions(service)  # durable, though never delivered
    assert store.verify_all() == []


def test_a_lock_before_the_flush_delivers_nothing(service: Service) -> None:
    saved = put(service, title="T", body="B")
    store: Store | None = service.store
    assert store is not None
    real = store.stage_intents

    def lock_first(items: Sequence[tuple[str, Mapping[str, Any]]]) -> StagedIntents:
        service.handle(parse_request({"op": "lock"}), CLI1)  # the idle lock, at the worst moment
        return real(items)

    store.stage_intents = lock_first  # type: ignore[method-assign]
    with pytest.raises(LockedError):
        call(service, {"op": "read", "ref": saved["asset"]})


def test_a_flush_that_fails_unexpectedly_denies_its_batch() -> None:
    queue = IntentQueue()
    lock = threading.RLock()
    with lock:
        ticket = queue.file("read.intent", {"asset": "a"})

    def broken(batch: Sequence[Ticket]) -> Callable[[], None]:
        def write() -> None:
            raise RuntimeError("a bug")

        return write

    with pytest.raises(RuntimeError):
        queue.wait([ticket], lock=lock, commit=broken)
    assert ticket.settled and isinstance(ticket.error, DeniedError)


def test_a_lock_drops_the_revisions_reads_cached(service: Service) -> None:
    saved = put(service, title="T", body="B")
    call(service, {"op": "read", "ref": saved["asset"]})
    vaults = service._core.domain()
    assert vaults.cached_records > 0
    call(service, {"op": "lock"})
    assert vaults.closed and vaults.cached_records == 0


def test_a_reader_whose_batch_is_written_does_not_wait_for_the_next_flush() -> None:
    queue = IntentQueue()
    lock = threading.RLock()
    gates = [threading.Event(), threading.Event()]
    started = [threading.Event(), threading.Event()]
    flushes: list[list[Ticket]] = []

    def commit(batch: Sequence[Ticket]) -> Callable[[], None]:
        turn = len(flushes)
        flushes.append(list(batch))

        def write() -> None:  # the fsync, without the service lock
            started[turn].set()
            assert gates[turn].wait(DEADLINE)
            for offset, ticket in enumerate(batch):
                ticket.settle(seq=10 * turn + offset)

        return write

    with lock:
        first, second = queue.file("read.intent", {"n": 1}), queue.file("read.intent", {"n": 2})
    flusher = threading.Thread(
        target=queue.wait, args=([first],), kwargs={"lock": lock, "commit": commit}
    )
    flusher.start()
    assert started[0].wait(DEADLINE)
    with lock:  # filed while the first batch is being written
        third = queue.file("read.intent", {"n": 3})
    waiters = [
        threading.Thread(target=queue.wait, args=([t],), kwargs={"lock": lock, "commit": commit})
        for t in (second, third)
    ]
    for thread in waiters:
        thread.start()
    gates[0].set()
    assert started[1].wait(DEADLINE)  # the next flush runs, and stays in its fsync
    flusher.join(DEADLINE)
    waiters[0].join(DEADLINE)
    # Both readers of the written batch are back while the next one is still being written.
    assert not flusher.is_alive() and not waiters[0].is_alive()
    assert waiters[1].is_alive()
    gates[1].set()
    waiters[1].join(DEADLINE)
    assert flushes == [[first, second], [third]]
    assert (first.seq, second.seq, third.seq) == (0, 1, 10)


def _reads(service: Service, count: int) -> list[tuple[Any, Any]]:
    saved = [put(service, title=f"T{i}", body=f"BODY-{i}") for i in range(count)]
    return [(parse_request({"op": "read", "ref": s["asset"]}), CLI1) for s in saved]


def test_a_batch_of_reads_is_answered_under_one_lock_hold_and_settled_by_one_commit(
    service: Service,
) -> None:
    reads = _reads(service, 3)
    missing = (parse_request({"op": "read", "ref": "0" * 26}), CLI1)
    store = service.store
    assert store is not None
    with gated_commits(store) as gate:
        pending = service.begin([*reads, missing])
        assert all(p.answer is not None and not p.blocks for p in pending[:3])
        assert gate.commits == 0  # nothing is durable yet, so nothing may be delivered
        service.settle(pending)
        assert gate.commits == 1
    assert [service.complete(p)[1]["body"] for p in pending[:3]] == [
        "BODY-0",
        "BODY-1",
        "BODY-2",
    ]
    with pytest.raises(NotFoundError):  # its error stays its own
        service.complete(pending[3])
    assert audit_actions(service).count("read.intent") == 3


def test_a_batch_whose_intents_cannot_be_written_delivers_none_of_its_answers(
    service: Service,
) -> None:
    reads = _reads(service, 3)
    store = service.store
    assert store is not None
    with gated_commits(store) as gate:
        gate.arm(fail=True)
        gate.release.set()
        pending = service.begin(reads)
        service.settle(pending)
    for one in pending:
        with pytest.raises(DeniedError, match="delivery denied"):
            service.complete(one)
    assert "read.intent" not in audit_actions(service)


def test_completing_a_read_that_was_never_settled_waits_for_its_intent_first(
    service: Service,
) -> None:
    (read,) = _reads(service, 1)
    store = service.store
    assert store is not None
    with gated_commits(store) as gate:
        (pending,) = service.begin([read])
        assert gate.commits == 0
        assert service.complete(pending)[1]["body"] == "BODY-0"
        assert gate.commits == 1  # the intent was made durable before the answer
