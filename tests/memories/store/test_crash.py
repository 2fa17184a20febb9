"""Kill a committing process at random points: the store always opens at a committed prefix."""

from __future__ import annotations

import os
import random
import signal
import struct
import time
from pathlib import Path

import pytest

from memories.store import Store
from tests.memories.store.support import PASSWORD, new_store, unlocked

KILLS = 200
_ACK = struct.Struct(">I")
_READY = 0xFFFFFFFF


def _value(i: int) -> bytes:
    return f"value {i} ".encode() * (1 + i % 40)


def _commit_forever(path: Path, start: int, ack_fd: int) -> None:
    """The child: commit numbered records and report each one that returned."""
    store = Store.open(path)
    store.unlock(PASSWORD)
    os.write(ack_fd, _ACK.pack(_READY))
    i = start
    while True:
        mutation = store.mutation()
        mutation.put(f"k{i:06d}", _value(i))
        if i % 3 == 0:
            mutation.put_blob(f"b{i:06d}", _value(i) * 50)
        store.commit(mutation, action="crash.put", details={"i": i})
        os.write(ack_fd, _ACK.pack(i))
        i += 1


def _read_acks(fd: int) -> list[int]:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    acks = [_ACK.unpack_from(data, at)[0] for at in range(0, len(data) - len(data) % 4, 4)]
    return [ack for ack in acks if ack != _READY]


@pytest.mark.slow
def test_sigkill_at_random_points_never_loses_an_acknowledged_commit(tmp_path: Path) -> None:
    path = new_store(tmp_path / "crash.db")
    rng = random.Random(20261201)
    present = 0
    acknowledged_total = 0
    for _ in range(KILLS):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            try:
                os.close(read_fd)
                _commit_forever(path, present, write_fd)
            finally:
                os._exit(0)
        os.close(write_fd)
        first: list[int] = []
        if rng.random() < 0.9:  # most kills land among commits, some during unlock
            assert os.read(read_fd, _ACK.size) == _ACK.pack(_READY)
            if rng.random() < 0.5:  # on a loaded machine, still let commits happen
                first = [_ACK.unpack(os.read(read_fd, _ACK.size))[0]]
        # The kill point is the randomness under test, not a synchronisation wait.
        time.sleep(rng.uniform(0.0, 0.02))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        acks = first + _read_acks(read_fd)
        os.close(read_fd)
        with unlocked(path) as store:
            keys = sorted(key for key, _ in store.entries("k"))
            assert keys == [f"k{i:06d}" for i in range(len(keys))], "not a committed prefix"
            if acks:
                assert acks == list(range(present, acks[-1] + 1))
                assert len(keys) > acks[-1], "an acknowledged commit was lost"
            for key in keys[present:]:
                i = int(key[1:])
                assert store.get(key) == _value(i)
                if i % 3 == 0:
                    assert store.get_blob(f"b{i:06d}") == _value(i) * 50
            acknowledged_total += len(acks)
            present = len(keys)
    assert acknowledged_total > KILLS // 3, "the child should commit between most kills"
    with unlocked(path) as store:
        report = store.verify()
        assert report["checkpoints"] == present + 1
