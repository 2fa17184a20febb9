from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memories.ipc import IpcServer
from tests.memories.ipc.support import ToyHandler


@pytest.fixture
def socket_path(tmp_path: Path) -> Path:
    return tmp_path / "run" / "memories.sock"


@pytest.fixture
def handler() -> ToyHandler:
    return ToyHandler()


@pytest.fixture
def make_server(socket_path: Path, handler: ToyHandler) -> Iterator[Callable[..., IpcServer]]:
    """Start a server on ``socket_path`` with the toy handler; every one is stopped afterwards."""
    servers: list[IpcServer] = []

    def make(**kwargs: Any) -> IpcServer:
        server = IpcServer(kwargs.pop("path", socket_path), handler, **kwargs)
        server.start()
        servers.append(server)
        return server

    yield make
    handler.release.set()
    for server in servers:
        server.stop()
