"""Encrypted store: commit latency as the store grows, and unlock time.

- commit: one 2 KiB record per commit (sealed, row + root + checkpoint in one transaction,
  ``synchronous=FULL``) at 100, 10,000 and 100,000 records, against a bare SQLite one-row
  transaction with the same pragmas in the same folder, the two alternating sample by sample.
  Goals: p50 at 100,000 within 1.5x of p50 at 100; p50 within 3x of the bare transaction.
- unlock: default Argon2id parameters (t=3, 64 MiB, p=4), split into the KDF and the rest (root
  digest over every row, decrypting the in-memory entries, both ends of the checkpoint chain, both
  rollback anchors). The records are laid out as the vault uses them: a small entry plus a 2 KiB
  blob per record. Goal: the rest under 0.5 s at 100,000.
- verify: ``Store.verify_all`` with every blob key given as referenced (every page, every blob,
  references both ways, the whole chain, header, root and anchors) at the largest size, against
  reading every blob once through ``get_blob`` in the same run. Goal: within 2x of that read.
- rotate: ``Store.rotate_master_key`` (re-seal everything in one transaction) at the largest
  size, against the same read of every blob; reported, no goal.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks import report
from memories.store import KdfCost, Store, create_store
from memories.store.records import StoreKeys

PASSWORD = "benchmark password"  # noqa: S105 - a throwaway store
FAST = KdfCost(time_cost=1, memory_kib=19456, parallelism=1)
RECORD = os.urandom(1024).hex().encode("ascii")  # 2 KiB


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


def _fill(store: Store, start: int, stop: int, *, batch: int = 2000) -> None:
    for low in range(start, stop, batch):
        mutation = store.mutation()
        for i in range(low, min(stop, low + batch)):
            mutation.put(f"asset/{i:08d}", b'{"title":"memory %d","heads":["r%d"]}' % (i, i))
            mutation.put_blob(f"rev/{i:08d}", RECORD)
        store.commit(mutation, action="bench.fill")


def _latencies(
    store: Store, bare: sqlite3.Connection, samples: int
) -> tuple[list[float], list[float]]:
    """Store commits and bare transactions, alternating, so both see the same disk weather."""
    ours, theirs = [], []
    for i in range(samples):
        mutation = store.mutation()
        mutation.put(f"bench/{i % 50}", RECORD)
        began = time.perf_counter()
        store.commit(mutation, action="bench.put", details={"i": i})
        ours.append(time.perf_counter() - began)
        began = time.perf_counter()
        bare.execute("BEGIN IMMEDIATE")
        bare.execute("INSERT OR REPLACE INTO t VALUES (?, ?)", (i % 50, RECORD))
        bare.execute("COMMIT")
        theirs.append(time.perf_counter() - began)
    return ours, theirs


def _read_every_blob(store: Store, count: int) -> float:
    began = time.perf_counter()
    for i in range(count):
        store.get_blob(f"rev/{i:08d}")
    return time.perf_counter() - began


def _verify(store: Store, count: int) -> float:
    """verify_all against reading every blob once, alternating, best of three each."""
    keys = [f"rev/{i:08d}" for i in range(count)]
    reads, verifies = [], []
    for _ in range(3):
        reads.append(_read_every_blob(store, count))
        began = time.perf_counter()
        problems = store.verify_all(keys)
        verifies.append(time.perf_counter() - began)
        if problems:
            raise SystemExit(f"the benchmark store has {len(problems)} problems")
    read, verify = min(reads), min(verifies)
    report(
        "store",
        f"verify_all_at_{count}",
        verify,
        "s",
        read,
        higher_is_better=False,
        baseline_name="get_blob of every blob once",
        goal="<= 2x the read",
        ratio_to_read=round(verify / read, 3),
    )
    return read


def _rotate(store: Store, count: int, read: float) -> None:
    """Last, so the large transaction it writes does not weigh on the other measurements."""
    began = time.perf_counter()
    store.rotate_master_key(PASSWORD)
    rotate = time.perf_counter() - began
    report(
        "store",
        f"rotate_master_key_at_{count}",
        rotate,
        "s",
        read,
        higher_is_better=False,
        baseline_name="get_blob of every blob once",
    )


def _bare(folder: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(folder / "bare.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, value BLOB)")
    return conn


def run(quick: bool = False) -> None:
    sizes = (100, 10_000) if quick else (100, 10_000, 100_000)
    samples = 100 if quick else 300
    with tempfile.TemporaryDirectory(prefix="memories-bench-") as tmp:
        folder = Path(tmp)
        bare = _bare(folder)
        path = folder / "store.db"
        state = folder / "state"  # the second rollback anchor, kept out of the real home
        create_store(path, PASSWORD, cost=FAST, state_dir=state)
        first_p50 = None
        with Store.open(path, state_dir=state) as store:
            store.unlock(PASSWORD)
            present = 0
            for size in sizes:
                _fill(store, present, size)
                present = size
                ours, theirs = _latencies(store, bare, samples)
                p50, p95 = _percentiles(ours)
                bare_p50, bare_p95 = _percentiles(theirs)
                first_p50 = first_p50 or p50
                report(
                    "store",
                    f"commit_p50_at_{size}",
                    p50 * 1000,
                    "ms",
                    bare_p50 * 1000,
                    higher_is_better=False,
                    baseline_name="bare sqlite synchronous=FULL txn",
                )
                report(
                    "store",
                    f"commit_p95_at_{size}",
                    p95 * 1000,
                    "ms",
                    bare_p95 * 1000,
                    higher_is_better=False,
                )
                report(
                    "store",
                    f"commit_growth_at_{size}",
                    p50 / first_p50,
                    "x",
                    1.5,
                    higher_is_better=False,
                    goal="<= 1.5x the p50 at 100 records",
                )
            read = _verify(store, sizes[-1])
        bare.close()
        default = KdfCost()
        with Store.open(path, state_dir=state) as store:
            store.unlock(PASSWORD)
            store.change_password(
                PASSWORD,
                PASSWORD,
                time_cost=default.time_cost,
                memory_kib=default.memory_kib,
                parallelism=default.parallelism,
            )
        with Store.open(path, state_dir=state) as store:
            # The two halves of ``Store.unlock``, timed apart.
            began = time.perf_counter()
            master = store._unwrap(PASSWORD)
            kdf_time = time.perf_counter() - began
            began = time.perf_counter()
            store._establish(StoreKeys(master, store.store_id))
            rest = time.perf_counter() - began
            rows = store.count()
        report("store", "unlock_kdf", kdf_time, "s", kdf_params="argon2id t=3 m=64MiB p=4")
        report(
            "store",
            f"unlock_rest_at_{sizes[-1]}",
            rest,
            "s",
            0.5,
            higher_is_better=False,
            rows=rows,
            goal="< 0.5 s",
        )
        with Store.open(path, state_dir=state) as store:
            store.unlock(PASSWORD)
            _rotate(store, sizes[-1], read)
