"""A real store with a real vault domain for vault tests."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memories.crypto import ExchangeKey, SigningKey, new_id
from memories.errors import MemoriesError
from memories.store import KdfCost, Store, create_store
from memories.vault import DeviceCertificate, LocalIdentity, Vaults, initialize
from memories.vault.identity import now

FAST = KdfCost(time_cost=1, memory_kib=19456, parallelism=1)
PASSWORD = "vault test password"


def new_vault_store(path: Path) -> Path:
    create_store(
        path,
        PASSWORD,
        cost=FAST,
        setup=lambda m: initialize(m, device_name="test device", local_config={"version": "t"}),
    )
    return path


@contextmanager
def opened(path: Path, **options: Any) -> Iterator[Vaults]:
    """The store at ``path``, unlocked, with a ``Vaults`` over it (``options`` go to Vaults)."""
    with Store.open(path) as store:
        store.unlock(PASSWORD)
        yield Vaults(store, **options)


def another_device(identity: LocalIdentity, *, user: SigningKey | None = None) -> LocalIdentity:
    """A new device with its own keys, certified by ``identity``'s user key (or ``user``)."""
    user = user or identity.user
    device = SigningKey.generate()
    exchange = ExchangeKey.generate()
    unsigned = DeviceCertificate(
        user_key=user.public_bytes(),
        device_id=new_id(),
        device_name="second device",
        signing_key=device.public_bytes(),
        exchange_key=exchange.public_bytes(),
        not_before=now(),
        not_after=None,
        signature=b"",
    )
    certificate = replace(unsigned, signature=user.sign_canonical(unsigned.body()))
    return LocalIdentity(user, device, exchange, certificate, identity.user_name)


def refused(
    vaults: Vaults, error: type[MemoriesError], call: Callable[[], object]
) -> MemoriesError:
    """Run ``call``, expect ``error``, and check that nothing was committed meanwhile."""
    before = vaults.store.seq
    with pytest.raises(error) as caught:
        call()
    assert vaults.store.seq == before, "a refused operation committed something"
    return caught.value


def blob_rows(path: Path) -> set[bytes]:
    """The ids of the write-once rows in the file (read while no store has it open)."""
    conn = sqlite3.connect(path)
    try:
        return {bytes(row[0]) for row in conn.execute("SELECT id FROM state WHERE kind = 1")}
    finally:
        conn.close()


def flip_row(path: Path, row_id: bytes, at: int = -1) -> None:
    """Flip one bit of the row ``row_id`` behind the store's back."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        (value,) = conn.execute("SELECT value FROM state WHERE id = ?", (row_id,)).fetchone()
        data = bytearray(value)
        data[at] ^= 0x01
        conn.execute("UPDATE state SET value = ? WHERE id = ?", (bytes(data), row_id))
    finally:
        conn.close()


def dumped(value: object) -> str:
    """Everything a view could show, as one JSON text to search for leaks."""
    return json.dumps(value, default=lambda o: o.to_dict() if hasattr(o, "to_dict") else repr(o))
