"""A real store with a real vault domain for vault tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memories.store import KdfCost, Store, create_store
from memories.vault import Vaults, initialize

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
def opened(path: Path) -> Iterator[Vaults]:
    with Store.open(path) as store:
        store.unlock(PASSWORD)
        yield Vaults(store)
