"""Real stores for the devices tests: an ordinary one and a join-mode one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memories.devices.pairing import stage_join
from memories.store import KdfCost, Store, create_store
from memories.vault import Vaults, initialize

FAST = KdfCost(time_cost=1, memory_kib=19456, parallelism=1)
PASSWORD = "devices test password"
LOCAL_CONFIG = {"client_version": "test"}


def new_store(path: Path, user_name: str = "me") -> Path:
    create_store(
        path,
        PASSWORD,
        cost=FAST,
        setup=lambda m: initialize(m, user_name=user_name, local_config=LOCAL_CONFIG),
    )
    return path


def new_join_store(path: Path, device_name: str = "laptop") -> Path:
    create_store(path, PASSWORD, cost=FAST, setup=lambda m: stage_join(m, device_name=device_name))
    return path


@contextmanager
def opened(path: Path) -> Iterator[Vaults]:
    with Store.open(path) as store:
        store.unlock(PASSWORD)
        vaults = Vaults(store)
        try:
            yield vaults
        finally:
            vaults.close()
