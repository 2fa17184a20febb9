"""A toy request handler and raw-socket helpers for the IPC tests."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memories.errors import NotFoundError, ProtocolError, UnavailableError
from memories.ipc import FrameDecoder, IpcClient, Peer, encode_frame
from memories.ipc.async_client import AsyncIpcClient

RAW_TIMEOUT = 5.0
SECRET = "hunter2-SECRET-PAYLOAD"


def blocking_call(socket_path: Path, request: dict[str, Any]) -> dict[str, Any]:
    """One request through a new :class:`IpcClient` (connecting is lazy: constructing never
    fails)."""
    with IpcClient(socket_path) as client:
        return client.call(request)


def async_call(socket_path: Path, request: dict[str, Any]) -> dict[str, Any]:
    """One request through a new :class:`AsyncIpcClient` on a loop of its own."""
    return asyncio.run(AsyncIpcClient(socket_path).call(request))


#: Both clients, for the rules they share word for word.
ONE_CALL = [blocking_call, async_call]


class ToyHandler:
    """Answers ``echo``, ``block`` (until released), ``fail``, ``crash`` and ``unframeable``."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], peer: Peer) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
        op = request["op"]
        if op == "echo":
            return {"request": request, "peer": [peer.pid, peer.uid, peer.gid]}
        if op == "block":
            self.entered.set()
            released = self.release.wait(timeout=10)
            return {"released": released}
        if op == "fail":
            raise NotFoundError("no such card; list cards with `memories card list`")
        if op == "crash":
            raise RuntimeError(f"could not process {SECRET}")
        if op == "unframeable":
            return {"value": {SECRET}}
        if op == "not_a_dict":
            return [SECRET]  # type: ignore[return-value]
        raise NotFoundError("unknown op")


def connect_raw(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(RAW_TIMEOUT)
    sock.connect(str(path))
    return sock


def header(length: int) -> bytes:
    return struct.pack(">I", length)


def raw_frame(body: bytes) -> bytes:
    return header(len(body)) + body


def request_frame(request_id: int | str, request: dict[str, Any]) -> bytes:
    return encode_frame({"v": 1, "id": request_id, "request": request})


class RawReader:
    """Reads decoded values from a raw socket, and tells end of file apart from a timeout."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._decoder = FrameDecoder()
        self._values: list[object] = []

    def value(self) -> Any:
        while not self._values:
            data = self.sock.recv(65536)
            if not data:
                raise AssertionError("the server closed the connection before answering")
            self._values.extend(self._decoder.feed(data))
        return self._values.pop(0)

    def at_eof(self) -> bool:
        """Whether the server has closed the connection (waits up to the socket timeout)."""
        if self._values:
            return False
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def envelope_after(path: Path, data: bytes, *, half_close: bool = False) -> tuple[Any, bool]:
    """Send raw bytes on a fresh connection; return the first envelope and whether EOF followed."""
    with connect_raw(path) as sock:
        # A server that refuses the connection may answer and close before we send.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        reader = RawReader(sock)
        envelope = reader.value()
        return envelope, reader.at_eof()


def other_uid() -> int:
    return os.getuid() + 4242


def _request_id(request: object) -> int:
    assert isinstance(request, dict)
    return int(request["id"])


#: A fake daemon's broken answers to one request, with the client error and message each must
#: cause: (reply to the request frame, error type, message pattern).
BROKEN_ANSWERS: list[tuple[Callable[[object], bytes], type[Exception], str]] = [
    (
        lambda r: encode_frame({"v": 1, "id": _request_id(r) + 1, "ok": True, "response": {}}),
        ProtocolError,
        "malformed response",
    ),
    (
        lambda r: encode_frame({"v": 1, "id": _request_id(r), "ok": True, "response": {}, "x": 1}),
        ProtocolError,
        "malformed response",
    ),
    (lambda r: raw_frame(b"{" + SECRET.encode()), ProtocolError, "malformed response"),
    (lambda r: b"\x7f\xff\xff\xff", ProtocolError, "malformed response"),
    (lambda r: b"", UnavailableError, "closed the connection before answering"),
    (lambda r: raw_frame(b"{}")[:3], UnavailableError, "closed the connection"),
]
