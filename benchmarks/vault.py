"""Vault domain: reads and writes as the vault grows, a deep history, and the graph projection.

- put / get: ``Vaults.put`` and ``Vaults.get`` (of random existing assets) of a 2 KiB memory
  in a store of 1,000 and of 100,000 assets (``--quick``: 1,000 and 10,000). Goal: p50 at the
  largest size within 1.5x of p50 at 1,000. The machine is shared, so the 1,000-asset
  reference is a second store measured in alternating rounds with the growing one, in the same
  time window. Same-run baselines: a bare SQLite ``synchronous=FULL`` one-row transaction for
  put; the store's own read of one 2 KiB blob (``Store.get_blob``) for get.
- history: ``Vaults.history`` of one asset with 1,000 revisions, against reading the same
  revision headers and chunks straight from the store (no parsing, no decryption of content);
  and one edit of that asset based on its head, against a put of a new memory.
- verify: ``Vaults.verification`` (every policy chain and revision: signatures, parents,
  chunks decrypted) of the 1,000-asset store, against ``Store.verify`` of the same store
  (every row decrypted once, no parsing or signature checks).
- observers: ``Vaults.put`` with one no-op commit observer subscribed, against puts with none,
  alternating in the same store. Goal: within 1.1x.
- graph: ``Vaults.graph`` over 10,000 cards and 50,000 links (``--quick``: 2,000 and 10,000).
  Goal: under 1 s. Cold is the first call after unlock (it also reads every asset record of the
  store), warm the calls after it. Measured in a store holding just those cards, and again in
  the big store (cards beside the 100,000 memories).

Stores are filled in big batches straight through store mutations (one commit per 1,000
assets), with revisions sealed and signed exactly as the vault writes them.
"""

from __future__ import annotations

import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks import report
from memories.crypto import new_id
from memories.store import KdfCost, Store, create_store
from memories.vault import Content, Link, Vaults, initialize, make_content
from memories.vault.assets import AssetState
from memories.vault.content import Kind
from memories.vault.operations import load_policy, write_revision
from memories.vault.records import asset_key, chunk_key, revision_key
from memories.vault.revision import seal_revision

PASSWORD = "benchmark password"  # noqa: S105 - a throwaway store
FAST = KdfCost(time_cost=1, memory_kib=19456, parallelism=1)
BODY = os.urandom(1024).hex()  # 2 KiB
BATCH = 1000
ROUNDS = 4

Item = tuple[str, Kind, Content, tuple[Link, ...]]  # asset id, kind, content, outgoing links


def _p50(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def _p95(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


def _anchors(path: Path) -> Path:
    """The second rollback anchor's folder, beside the throwaway store (never the real one)."""
    return path.parent / "state"


def _new_store(path: Path) -> Store:
    create_store(
        path,
        PASSWORD,
        cost=FAST,
        setup=lambda m: initialize(m, device_name="bench"),
        state_dir=_anchors(path),
    )
    store = Store.open(path, state_dir=_anchors(path))
    store.unlock(PASSWORD)
    return store


def _fill(store: Store, items: Iterable[Item], asset_ids: list[str]) -> None:
    """Seal and store one revision per item, ``BATCH`` assets per commit; appends the ids."""
    vaults = Vaults(store)
    identity = vaults.identity
    record = vaults.resolve_vault(None)
    policy = load_policy(store, record)
    epoch_key = record.keys[record.epoch]
    mutation = store.mutation()
    staged = 0
    for asset_id, kind, content, links in items:
        revision, chunks = seal_revision(
            identity,
            vault_id=record.vault_id,
            asset_id=asset_id,
            kind=kind,
            parents=(),
            policy=policy,
            epoch_key=epoch_key,
            content=content,
        )
        revision_id = revision.id
        mutation.put_blob(revision_key(revision_id), revision.to_bytes())
        for index, chunk in enumerate(chunks):
            mutation.put_blob(chunk_key(revision_id, index), chunk)
        state = AssetState.first(
            asset_id=asset_id,
            vault_id=record.vault_id,
            kind=kind,
            revision_id=revision_id,
            content=content,
            at=revision.created_at,
            author=identity.user_fingerprint,
        )
        mutation.put(asset_key(kind, asset_id), replace(state, links=links).to_bytes())
        asset_ids.append(asset_id)
        staged += 1
        if staged == BATCH:
            store.commit(mutation, action="bench.fill")
            mutation, staged = store.mutation(), 0
    if not mutation.empty:
        store.commit(mutation, action="bench.fill")


def _memories(count: int, start: int) -> Iterable[Item]:
    for i in range(start, start + count):
        yield new_id(), "memory", make_content("memory", title=f"memory {i}", body=BODY), ()


def _bare_commit_p50(folder: Path, samples: int) -> float:
    conn = sqlite3.connect(folder / "bare.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, value BLOB)")
    out = []
    for i in range(samples):
        began = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT OR REPLACE INTO t VALUES (?, ?)", (i % 50, BODY.encode("ascii")))
        conn.execute("COMMIT")
        out.append(time.perf_counter() - began)
    conn.close()
    return _p50(out)


class _Subject:
    """One store under measurement: its vault domain, its asset ids and the timings taken."""

    def __init__(self, store: Store, asset_ids: list[str]) -> None:
        self.store = store
        self.asset_ids = asset_ids
        self.vaults = Vaults(store)
        self.puts: list[float] = []
        self.gets: list[float] = []
        self.blobs: list[float] = []

    def measure(self, samples: int, rng: random.Random) -> None:
        for i in range(samples):
            began = time.perf_counter()
            saved = self.vaults.put(None, "memory", title=f"timed {i}", body=BODY)
            self.puts.append(time.perf_counter() - began)
            self.asset_ids.append(saved.asset_id)
        for asset_id in rng.sample(self.asset_ids, samples * 3):
            began = time.perf_counter()
            self.vaults.get(asset_id)
            self.gets.append(time.perf_counter() - began)
        keys = []
        for asset_id in rng.sample(self.asset_ids, samples):
            data = self.store.get(asset_key("memory", asset_id))
            assert data is not None
            keys.append(chunk_key(AssetState.from_bytes(data).newest, 0))
        for key in keys:
            began = time.perf_counter()
            self.store.get_blob(key)
            self.blobs.append(time.perf_counter() - began)


def _put_get(
    growing: _Subject, reference: _Subject, size: int, samples: int, bare_p50: float
) -> None:
    rng = random.Random(size)
    for _ in range(ROUNDS):  # alternate, so drift on a shared machine hits both alike
        growing.measure(samples // ROUNDS, rng)
        reference.measure(samples // ROUNDS, rng)
    put_p50, get_p50 = _p50(growing.puts), _p50(growing.gets)
    report(
        "vault",
        f"put_p50_at_{size}",
        put_p50 * 1000,
        "ms",
        bare_p50 * 1000,
        higher_is_better=False,
        baseline_name="bare sqlite synchronous=FULL one-row txn",
        p95_ms=round(_p95(growing.puts) * 1000, 3),
    )
    report(
        "vault",
        f"get_p50_at_{size}",
        get_p50 * 1000,
        "ms",
        _p50(growing.blobs) * 1000,
        higher_is_better=False,
        baseline_name="Store.get_blob of one 2 KiB blob",
        p95_ms=round(_p95(growing.gets) * 1000, 3),
    )
    for op, value, at_reference in (
        ("put", put_p50, _p50(reference.puts)),
        ("get", get_p50, _p50(reference.gets)),
    ):
        report(
            "vault",
            f"{op}_growth_at_{size}",
            value / at_reference,
            "x",
            1.5,
            higher_is_better=False,
            goal="<= 1.5x the p50 in the 1,000-asset store, measured alongside",
            reference_p50_ms=round(at_reference * 1000, 4),
        )
    for subject in (growing, reference):
        subject.puts.clear()
        subject.gets.clear()
        subject.blobs.clear()


def _deep_history(store: Store, depth: int) -> tuple[str, list[str]]:
    """One asset with ``depth`` revisions, written through the vault's own write path."""
    vaults = Vaults(store)
    identity = vaults.identity
    record = vaults.resolve_vault(None)
    asset_id = new_id()
    state = None
    revisions = []
    mutation = store.mutation()
    for i in range(depth):
        content = make_content("memory", title=f"deep v{i}", body=BODY)
        revision, state = write_revision(
            mutation,
            identity,
            record,
            asset_id=asset_id,
            kind="memory",
            state=state,
            parents=() if state is None else state.heads,
            content=content,
        )
        revisions.append(revision.id)
        if len(mutation.blobs) > 2 * BATCH:
            store.commit(mutation, action="bench.history")
            mutation = store.mutation()
    store.commit(mutation, action="bench.history")
    return asset_id, revisions


def _history(store: Store, depth: int) -> None:
    asset_id, revisions = _deep_history(store, depth)
    vaults = Vaults(store)
    times = []
    for _ in range(3):
        began = time.perf_counter()
        entries = vaults.history(asset_id)
        times.append(time.perf_counter() - began)
        assert len(entries) == depth
    baseline = []
    for _ in range(3):
        began = time.perf_counter()
        for revision_id in revisions:
            store.get_blob(revision_key(revision_id))
            store.get_blob(chunk_key(revision_id, 0))
        baseline.append(time.perf_counter() - began)
    report(
        "vault",
        f"history_{depth}_revisions",
        _p50(times),
        "s",
        _p50(baseline),
        higher_is_better=False,
        baseline_name=f"store.get_blob of the {depth} headers and chunks",
    )
    edits, puts = [], []
    for i in range(10):
        head = vaults.get(asset_id).revision
        began = time.perf_counter()
        vaults.update(asset_id, base=head, title=f"deep edit {i}")
        edits.append(time.perf_counter() - began)
        began = time.perf_counter()
        vaults.put(None, "memory", title=f"fresh {i}", body=BODY)
        puts.append(time.perf_counter() - began)
    report(
        "vault",
        f"update_p50_at_{depth}_revisions",
        _p50(edits) * 1000,
        "ms",
        _p50(puts) * 1000,
        higher_is_better=False,
        baseline_name="put p50 of a new 2 KiB memory, alternating",
    )


def _verify(store: Store) -> None:
    vaults = Vaults(store)
    times, baseline = [], []
    for _ in range(3):  # alternating, as everywhere on a shared machine
        began = time.perf_counter()
        report_ = vaults.verification()
        times.append(time.perf_counter() - began)
        began = time.perf_counter()
        store.verify()
        baseline.append(time.perf_counter() - began)
    assert report_.ok, "the benchmark store should verify"
    report(
        "vault",
        f"verify_{report_.assets}_assets_{report_.revisions}_revisions",
        _p50(times),
        "s",
        _p50(baseline),
        higher_is_better=False,
        baseline_name="Store.verify of the same store",
        referenced_blobs=len(report_.referenced_blobs),
    )


def _observer_overhead(store: Store, samples: int) -> None:
    vaults = Vaults(store)
    observed: list[object] = []
    plain, with_observer = [], []
    for i in range(samples):
        unsubscribe = vaults.subscribe(observed.append) if i % 2 else None
        began = time.perf_counter()
        vaults.put(None, "memory", title=f"observed {i}", body=BODY)
        (with_observer if unsubscribe else plain).append(time.perf_counter() - began)
        if unsubscribe is not None:
            unsubscribe()
    assert len(observed) == len(with_observer)
    report(
        "vault",
        "put_p50_with_one_observer",
        _p50(with_observer) * 1000,
        "ms",
        _p50(plain) * 1000,
        higher_is_better=False,
        baseline_name="put p50 with no observer, alternating",
        goal="<= 1.1x",
    )


def _cards(count: int, links: int, rng: random.Random) -> list[Item]:
    ids = [new_id() for _ in range(count)]
    per_card = links // count
    items: list[Item] = []
    for position, source in enumerate(ids):
        targets = rng.sample(range(count - 1), per_card)
        edges = tuple(
            Link(source, ids[t + (t >= position)], "related" if t % 2 else "depends_on")
            for t in targets
        )
        content = make_content(
            "card",
            title=f"card {position}",
            card_type="knowledge",
            metadata={"topic": f"topic {position % 50}"},
        )
        items.append((source, "card", content, edges))
    return items


def _graph(path: Path, store: Store, items: list[Item], where: str) -> None:
    """Add ``items`` to the store at ``path`` (open as ``store``), reopen it, time the graph."""
    _fill(store, items, [])
    store.close()
    links = sum(len(item[3]) for item in items)
    with Store.open(path, state_dir=_anchors(path)) as reopened:
        reopened.unlock(PASSWORD)
        vaults = Vaults(reopened)
        began = time.perf_counter()
        graph = vaults.graph()
        cold = time.perf_counter() - began
        warm = []
        for _ in range(3):
            began = time.perf_counter()
            vaults.graph()
            warm.append(time.perf_counter() - began)
        entries = reopened.count()
    assert len(graph.nodes) == len(items) and len(graph.edges) == links
    for name, value in (("cold", cold), ("warm", _p50(warm))):
        report(
            "vault",
            f"graph_{len(items)}_cards_{links}_links_{name}_{where}",
            value,
            "s",
            1.0,
            higher_is_better=False,
            baseline_name="goal: 1 s",
            store_entries=entries,
        )


def run(quick: bool = False) -> None:
    sizes = (1_000, 10_000) if quick else (1_000, 100_000)
    samples = 60 if quick else 200
    cards, links = (2_000, 10_000) if quick else (10_000, 50_000)
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="memories-bench-vault-") as tmp:
        folder = Path(tmp)
        bare_p50 = _bare_commit_p50(folder, samples)
        card_items = _cards(cards, links, rng)
        _graph(folder / "cards.db", _new_store(folder / "cards.db"), card_items, "alone")
        big_path = folder / "vault.db"
        big = _new_store(big_path)
        small = _new_store(folder / "reference.db")
        try:
            reference_ids: list[str] = []
            _fill(small, _memories(sizes[0], 0), reference_ids)
            reference = _Subject(small, reference_ids)
            _verify(small)
            _observer_overhead(small, samples)
            asset_ids: list[str] = []
            for size in sizes:
                began = time.perf_counter()
                _fill(big, _memories(size - len(asset_ids), len(asset_ids)), asset_ids)
                report("vault", f"fill_to_{size}", time.perf_counter() - began, "s", batch=BATCH)
                _put_get(_Subject(big, asset_ids), reference, size, samples, bare_p50)
            _history(big, 1_000)
            _graph(big_path, big, _cards(cards, links, rng), f"beside_{sizes[-1]}_memories")
        finally:
            big.close()
            small.close()
