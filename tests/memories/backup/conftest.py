"""Services in two data homes (the one backed up, and a fresh one to restore into), each over
a real store file with the fastest KDF; and backups of the first."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memories.config import Settings, load_settings
from memories.service import Service
from tests.memories.service.support import FAST, PASSWORD, Clock, call, sudo

PASSPHRASE = "a backup passphrase"
NEW_PASSWORD = "the restored store's password"


def home_settings(base: Settings, home: Path) -> Settings:
    """``base`` moved to the data home ``home`` (the rollback anchors' folder stays shared;
    they are named by each store's id)."""
    return dataclasses.replace(
        base,
        data_home=home,
        store_path=home / "store" / "memories.db",
        socket_path=home / "run" / "daemon.sock",
        log_path=home / "daemon.log",
    )


@pytest.fixture
def make_service(tmp_path: Path) -> Iterator[Callable[[str], Service]]:
    made: list[Service] = []
    base = load_settings()

    def make(name: str) -> Service:
        service = Service(home_settings(base, tmp_path / name), kdf_cost=FAST, clock=Clock())
        made.append(service)
        return service

    yield make
    for service in made:
        service.close()


@pytest.fixture
def source(make_service: Callable[[str], Service]) -> Service:
    """An initialized, unlocked and elevated service: the store that gets backed up."""
    service = make_service("source")
    call(service, {"op": "init", "password": PASSWORD, "device_name": "old laptop"})
    sudo(service)
    return service


@pytest.fixture
def target(make_service: Callable[[str], Service]) -> Service:
    """A service in a fresh data home with no store: where a backup is restored."""
    return make_service("target")


def backup(service: Service, path: Path, **fields: Any) -> dict[str, Any]:
    return call(
        service, {"op": "backup_create", "path": str(path), "passphrase": PASSPHRASE, **fields}
    )


def restore(service: Service, path: Path, **fields: Any) -> dict[str, Any]:
    request = {
        "op": "backup_restore",
        "path": str(path),
        "passphrase": PASSPHRASE,
        "password": NEW_PASSWORD,
        **fields,
    }
    return call(service, request)
