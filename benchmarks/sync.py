"""Sync: a fresh device catching up through the folder transport, and one incremental edit.

- catch-up: N revisions (10,000; ``--quick``: 500) published by one device into a folder,
  then synced to a fresh replica of the vault (list, fetch, verify, merge, commit) with
  ``prepare``/``execute``/``ack`` passes until quiet. Baseline in the same run: ``cp -r`` of
  the same folder (the same bytes, no checks). Goal: within 3x.
- incremental: one edit on the first device, published, then the other device's pass that
  brings it in. Baseline: the folder transport's own list and reads of the two new files.
  Goal: at most 100 ms more than the baseline.

HOME and the XDG folders point into a temporary folder; nothing touches the real home.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import report
from memories.store import KdfCost, Store, create_store
from memories.sync.engine import execute, prepare
from memories.sync.merge import ack
from memories.sync.queue import TARGETS_KEY, Target, Targets
from memories.sync.transports import FolderTransport
from memories.vault import Vaults, initialize

PASSWORD = "benchmark password"  # noqa: S105 - a throwaway store
FAST = KdfCost(time_cost=1, memory_kib=19456, parallelism=1)
TARGET = Target("0b0e0c0d", "folder", "/bench", "2026-01-01T00:00:00Z")


def _isolate(root: Path) -> None:
    for name, sub in [
        ("HOME", ""),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
        ("MEMORIES_HOME", ".local/share/memories"),
    ]:
        os.environ[name] = str(root / sub) if sub else str(root)


def _replicas(root: Path) -> tuple[Path, Path]:
    first = root / "a" / "store.db"
    first.parent.mkdir(parents=True)
    create_store(first, PASSWORD, cost=FAST, setup=lambda m: initialize(m, local_config={}))
    with Store.open(first, state_dir=root / "a" / "state") as store:
        store.unlock(PASSWORD, accept_rollback=True)
        m = store.mutation()
        m.put(TARGETS_KEY, Targets((TARGET,)).to_bytes())
        store.commit(m, action="sync.target.add")
    shutil.copytree(root / "a", root / "b")
    return first, root / "b" / "store.db"


def _open(path: Path) -> tuple[Store, Vaults]:
    store = Store.open(path, state_dir=path.parent / "state")
    store.unlock(PASSWORD)
    return store, Vaults(store)


def _sync(vaults: Vaults, folder: FolderTransport) -> int:
    return _passes(vaults, folder)[0]


def _passes(vaults: Vaults, folder: FolderTransport) -> tuple[int, int]:
    """Passes until quiet: how many revisions they merged, and how many passes it took."""
    merged = passes = 0
    while passes < 10_000:
        passes += 1
        plan = prepare(vaults, TARGET, at=0.0)
        report_ = ack(vaults, plan, execute(plan, folder), at=0.0)
        merged += report_.merged
        if not report_.more:
            break
    return merged, passes


def run(*, quick: bool = False) -> None:
    count = 500 if quick else 10_000
    with tempfile.TemporaryDirectory(prefix="memories-bench-sync-") as tmp:
        root = Path(tmp)
        _isolate(root / "home")
        a_path, b_path = _replicas(root)
        folder = FolderTransport(root / "shared")
        a_store, a = _open(a_path)
        saved = None
        for i in range(count):
            saved = a.put(None, "memory", title=f"note {i}", body=f"body {i} " + "x" * 200)
        _sync(a, folder)
        size = sum(p.stat().st_size for p in (root / "shared").rglob("*") if p.is_file())

        b_store, b = _open(b_path)
        started = time.perf_counter()
        merged, passes = _passes(b, folder)
        catch_up = time.perf_counter() - started
        assert merged == count, (merged, count)

        started = time.perf_counter()
        subprocess.run(["cp", "-r", str(root / "shared"), str(root / "copy")], check=True)
        copy = time.perf_counter() - started
        report(
            "sync",
            "catch_up_seconds",
            catch_up,
            "s",
            copy,
            higher_is_better=False,
            revisions=count,
            passes=passes,
            bytes=size,
            baseline_is="cp -r of the same folder",
            goal_ratio_at_least=round(1 / 3, 4),
        )

        assert saved is not None
        a.update(saved.asset_id, body="edited once more")
        _sync(a, folder)
        before = set(FolderTransport(root / "copy").list())
        fresh = [n for n in folder.list() if n not in before]
        started = time.perf_counter()
        folder.list()
        for name in fresh:
            folder.get(name)
        raw = time.perf_counter() - started
        started = time.perf_counter()
        got = _sync(b, folder)
        incremental = time.perf_counter() - started
        assert got == 1
        report(
            "sync",
            "incremental_edit_ms",
            incremental * 1000,
            "ms",
            raw * 1000,
            higher_is_better=False,
            revisions_in_store=count + 1,
            overhead_ms=round((incremental - raw) * 1000, 2),
            goal_overhead_ms_at_most=100,
        )
        for vaults, store in ((a, a_store), (b, b_store)):
            vaults.close()
            store.close()
