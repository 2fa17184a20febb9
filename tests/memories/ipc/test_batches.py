"""The server answers the requests that arrive together as one batch, and slow ones aside."""

from __future__ import annotations

import random
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memories.errors import NotFoundError
from memories.ipc import IpcServer, Peer
from memories.ipc.handling import Prepared
from tests.memories.ipc.support import RawReader, connect_raw, request_frame
from tests.memories.store.support import DEADLINE
from tests.support import wait_for


@dataclass
class _Echo:
    request: dict[str, Any]
    gate: threading.Event | None = None

    @property
    def blocks(self) -> bool:
        return self.gate is not None

    def finish(self) -> dict[str, Any]:
        if self.gate is not None and not self.gate.wait(DEADLINE):
            raise AssertionError("the test never opened the gate")
        if self.request["op"] == "missing":
            raise NotFoundError("no such thing")
        return {"n": self.request["n"]}


class RecordingHandler:
    """Records each batch: ``prepare`` calls and what ``settle`` was given.

    The first ``prepare`` holds the server's thread until :attr:`go` is set, so requests sent
    meanwhile queue up; ``slow`` requests finish only once :attr:`slow_gate` opens.
    """

    def __init__(self) -> None:
        self.prepared: list[list[int]] = []
        self.settled: list[list[int]] = []
        self.entered = threading.Event()
        self.go = threading.Event()
        self.slow_gate = threading.Event()
        self.hold_first = True

    def prepare(self, requests: Sequence[tuple[dict[str, Any], Peer]]) -> list[Prepared]:
        if self.hold_first:
            self.hold_first = False
            self.entered.set()
            assert self.go.wait(DEADLINE)
        self.prepared.append([request["n"] for request, _ in requests])
        return [
            _Echo(request, self.slow_gate if request["op"] == "slow" else None)
            for request, _ in requests
        ]

    def settle(self, prepared: Sequence[Prepared]) -> None:
        self.settled.append([p.request["n"] for p in prepared if isinstance(p, _Echo)])


@pytest.fixture
def recording(socket_path: Path) -> Iterator[tuple[RecordingHandler, IpcServer]]:
    handler = RecordingHandler()
    server = IpcServer(socket_path, handler)
    server.start()
    yield handler, server
    handler.go.set()
    handler.slow_gate.set()
    server.stop()


def _send(sock: socket.socket, n: int, op: str = "echo") -> None:
    sock.sendall(request_frame(n, {"op": op, "n": n}))


def test_requests_that_arrive_together_are_prepared_and_settled_as_one_batch(
    recording: tuple[RecordingHandler, IpcServer], socket_path: Path
) -> None:
    handler, _ = recording
    sockets = [connect_raw(socket_path) for _ in range(5)]
    try:
        _send(sockets[0], 0)
        assert handler.entered.wait(DEADLINE)  # the server is busy with the first request
        for n, sock in enumerate(sockets[1:], start=1):
            _send(sock, n)
        handler.go.set()
        answers = [RawReader(sock).value() for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    assert [a["response"] for a in answers] == [{"n": n} for n in range(5)]
    assert handler.prepared[0] == [0]
    assert sorted(n for batch in handler.prepared[1:] for n in batch) == [1, 2, 3, 4]
    # Those that queued while the first was prepared joined its batch: one settle for all.
    assert sorted(handler.settled[0]) == [0, 1, 2, 3, 4]


def test_a_request_that_blocks_holds_up_neither_the_server_nor_its_batch(
    recording: tuple[RecordingHandler, IpcServer], socket_path: Path
) -> None:
    handler, _ = recording
    handler.go.set()
    with connect_raw(socket_path) as slow, connect_raw(socket_path) as quick:
        _send(slow, 1, "slow")
        _send(quick, 2)
        assert RawReader(quick).value()["response"] == {"n": 2}
        _send(quick, 3, "missing")
        error = RawReader(quick).value()["error"]
        assert error == {"code": "not_found", "message": "no such thing"}
        handler.slow_gate.set()
        assert RawReader(slow).value()["response"] == {"n": 1}


def test_a_client_that_closes_its_sending_side_still_gets_its_answer(
    recording: tuple[RecordingHandler, IpcServer], socket_path: Path
) -> None:
    handler, _ = recording
    handler.go.set()
    for op in ("echo", "slow"):
        with connect_raw(socket_path) as sock:
            _send(sock, 7, op)
            sock.shutdown(socket.SHUT_WR)
            handler.slow_gate.set()
            reader = RawReader(sock)
            assert reader.value()["response"] == {"n": 7}
            assert reader.at_eof()


class BrokenHandler(RecordingHandler):
    """Fails in ``prepare`` or ``settle`` while :attr:`broken` names that step."""

    def __init__(self) -> None:
        super().__init__()
        self.hold_first = False
        self.broken = "prepare"

    def prepare(self, requests: Sequence[tuple[dict[str, Any], Peer]]) -> list[Prepared]:
        if self.broken == "prepare":
            raise RuntimeError("prepare failed")
        return super().prepare(requests)

    def settle(self, prepared: Sequence[Prepared]) -> None:
        if self.broken == "settle":
            raise RuntimeError("settle failed")
        super().settle(prepared)


def test_a_handler_that_fails_answers_internal_error_and_the_server_goes_on(
    socket_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    handler = BrokenHandler()
    with IpcServer(socket_path, handler), connect_raw(socket_path) as sock:
        reader = RawReader(sock)
        for step, n in (("prepare", 1), ("settle", 2)):
            handler.broken = step
            _send(sock, n)
            error = reader.value()["error"]
            assert error == {"code": "error", "message": "internal error; see the daemon log"}
        handler.broken = ""
        _send(sock, 3)
        assert reader.value()["response"] == {"n": 3}
    assert "failed with RuntimeError" in caplog.text
    assert "prepare failed" not in caplog.text  # messages may carry content; never logged


def test_many_connections_at_once_each_get_their_own_answers_in_order(
    recording: tuple[RecordingHandler, IpcServer], socket_path: Path
) -> None:
    """Clients send pipelined runs, byte-split frames and early hang-ups, at once, on
    connections they keep opening anew (six of them, so even with each one's last connection
    not yet seen closed, none is refused as busy); every request that was sent whole is
    answered on its own connection, in order."""
    handler, server = recording
    handler.go.set()
    handler.slow_gate.set()
    failures: list[str] = []

    def client(seed: int) -> None:
        try:
            converse(seed)
        except OSError as exc:  # reported below, with the client's seed
            failures.append(f"client {seed}: {exc!r}")

    def converse(seed: int) -> None:
        rng = random.Random(seed)
        for round_ in range(8):
            numbers = [seed * 1000 + round_ * 10 + k for k in range(rng.randint(1, 4))]
            data = b"".join(
                request_frame(n, {"op": rng.choice(["echo", "echo", "slow"]), "n": n})
                for n in numbers
            )
            with connect_raw(socket_path) as sock:
                if rng.random() < 0.15:  # half a frame, then gone: nothing to answer
                    sock.sendall(data[: len(data) // 2 or 1])
                    continue
                while data:  # in pieces of random sizes
                    cut = rng.randint(1, len(data))
                    sock.sendall(data[:cut])
                    data = data[cut:]
                reader = RawReader(sock)
                got = [reader.value() for _ in numbers]
            if [answer["id"] for answer in got] != numbers or [
                answer["response"]["n"] for answer in got
            ] != numbers:
                failures.append(f"client {seed} round {round_}: {got}")

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    wait_for(lambda: server.connection_count == 0, timeout=5)
