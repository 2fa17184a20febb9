from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memories.ipc import FrameDecoder, IpcServer
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


@pytest.fixture
def fake_daemon(socket_path: Path) -> Iterator[Callable[..., None]]:
    """Listen on ``socket_path`` and answer each request frame with ``reply(request)``.

    With ``once``, the connection is closed right after the first answer.
    """
    socket_path.parent.mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_path))
    listener.listen()
    threads: list[threading.Thread] = []

    def serve(reply: Callable[[object], bytes], once: bool = False) -> None:
        def run() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(5)
                decoder = FrameDecoder()
                while True:
                    data = conn.recv(65536)
                    if not data:
                        return
                    for value in decoder.feed(data):
                        conn.sendall(reply(value))
                        if once:
                            return

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)

    yield serve
    listener.close()
    for thread in threads:
        thread.join(5)
