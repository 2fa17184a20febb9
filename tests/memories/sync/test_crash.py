"""SIGKILL during sync: the outbox and inbox resume without loss or duplication.

The suite runs a short form (``MEMORIES_SYNC_KILLS``, default 6 kills); the soak runs it with
``MEMORIES_SYNC_KILLS=100`` or more.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memories.sync.engine import load_state
from memories.sync.transports import FolderTransport
from tests.memories.sync.support import make_replicas, replica, sync_until_quiet, titles
from tests.support import wait_for

KILLS = int(os.environ.get("MEMORIES_SYNC_KILLS", "6"))
ROOT = Path(__file__).resolve().parents[3]


def _kill_during_sync(store: Path, folder: Path, rng: random.Random) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.memories.sync.crash_child", str(store), str(folder)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Kill at a random moment: while it opens the store, enqueues, uploads or merges.
        time.sleep(rng.uniform(0.0, 0.6))  # a random kill point, not a synchronisation
        child.send_signal(signal.SIGKILL)
        wait_for(lambda: child.poll() is not None, timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
        assert child.stdout is not None
        child.stdout.close()


@pytest.mark.slow
def test_sigkill_during_sync_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    a, b = make_replicas(tmp_path, 2)
    shared = tmp_path / "shared"
    folder = FolderTransport(shared)
    with replica(a) as va:
        for i in range(40):
            va.put(None, "memory", title=f"a{i:02}", body=f"from a {i}")
        sync_until_quiet(va, folder)
    with replica(b) as vb:
        for i in range(25):
            vb.put(None, "memory", title=f"b{i:02}", body=f"from b {i}")
    rng = random.Random(1234)
    for kill in range(KILLS):
        _kill_during_sync(b, shared, rng)
        if kill % 3 == 2:
            with replica(a) as va:  # the other device edits meanwhile
                va.put(None, "memory", title=f"a-late{kill:03}", body="later")
                sync_until_quiet(va, folder)
    with replica(b) as vb:
        sync_until_quiet(vb, folder)
        sync_until_quiet(vb, folder)
        got = titles(vb)
        state = load_state(vb.store)
        assert state.outbox == [] and state.inbox == {}
        assert vb.list_assets(conflicts_only=True) == []
        for summary in vb.list_assets():
            assert len(vb.history(summary.id)) == 1  # each revision merged exactly once
    late = [f"a-late{k:03}" for k in range(KILLS) if k % 3 == 2]
    expected = sorted([f"a{i:02}" for i in range(40)] + [f"b{i:02}" for i in range(25)] + late)
    assert got == expected
    with replica(a) as va:
        sync_until_quiet(va, folder)
        assert titles(va) == expected
    # Content-addressed: no object is stored twice under different names.
    names = folder.list()
    assert len(names) == len(set(names))
