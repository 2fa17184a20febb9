"""Services in two data homes (the one backed up, and a fresh one to restore into), each over
a real store file with the fastest KDF; and the same for the real console script."""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memories.config import Settings, load_settings
from memories.daemon.launcher import daemon_pid
from memories.processes import alive
from memories.service import Service
from tests.memories.cli import conftest as cli_fixtures
from tests.memories.cli.conftest import Memories
from tests.memories.service.support import FAST, PASSWORD, Clock, call, sudo
from tests.support import run_cli, wait_for

#: The CLI fixtures (a real daemon per test, stopped afterwards), for the CLI tests here.
memories = cli_fixtures.memories
store = cli_fixtures.store

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


class OtherHome(Memories):
    """``memories`` in a second data home (no store yet): where a backup is restored."""

    def __init__(self, home: Path) -> None:
        self.env = {"MEMORIES_HOME": str(home)}

    def __call__(self, *args: str, **kwargs: Any) -> Any:
        kwargs["env"] = {**self.env, **kwargs.get("env", {})}
        return super().__call__(*args, **kwargs)


@pytest.fixture
def other_home(tmp_path: Path) -> Iterator[OtherHome]:
    """A second data home; its daemon (if one starts) is stopped, or killed, afterwards."""
    other = OtherHome(tmp_path / "other home")
    try:
        yield other
    finally:
        pid = daemon_pid(load_settings({**os.environ, **other.env}))
        run_cli("memories", "daemon", "stop", env=other.env, timeout=30)
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not alive(pid), timeout=10)
