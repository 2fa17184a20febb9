"""The IPC server over a real Unix socket: framing, envelopes, limits, deadlines and access."""

from __future__ import annotations

import logging
import os
import random
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memories.errors import BusyError, ConflictError, DeniedError, MemoriesError, NotFoundError
from memories.ipc import MAX_FRAME, IpcClient, IpcServer, encode_frame
from tests.memories.ipc.support import (
    SECRET,
    RawReader,
    ToyHandler,
    connect_raw,
    envelope_after,
    header,
    other_uid,
    raw_frame,
    request_frame,
)
from tests.support import wait_for

MakeServer = Callable[..., IpcServer]


def assert_protocol_error(envelope: Any, *, request_id: object = None) -> str:
    assert envelope["v"] == 1
    assert envelope["ok"] is False
    assert envelope["id"] == request_id
    assert envelope["error"]["code"] == "protocol"
    message: str = envelope["error"]["message"]
    assert SECRET not in message
    return message


def test_round_trip_returns_the_handler_response_and_the_peer(
    make_server: MakeServer, socket_path: Path
) -> None:
    make_server()
    with IpcClient(socket_path) as client:
        response = client.call({"op": "echo", "text": "naïve 検索"})
        again = client.call({"op": "echo", "n": 2})
    assert response == {
        "request": {"op": "echo", "text": "naïve 検索"},
        "peer": [os.getpid(), os.getuid(), os.getgid()],
    }
    assert again["request"] == {"op": "echo", "n": 2}


def test_ids_are_echoed_and_pipelined_requests_answered_in_order(
    make_server: MakeServer, socket_path: Path
) -> None:
    make_server()
    ids: list[int | str] = [41, "req-α", -7, "x" * 128]
    with connect_raw(socket_path) as sock:
        sock.sendall(b"".join(request_frame(i, {"op": "echo", "i": n}) for n, i in enumerate(ids)))
        reader = RawReader(sock)
        answers = [reader.value() for _ in ids]
    assert [a["id"] for a in answers] == ids
    assert [a["response"]["request"]["i"] for a in answers] == [0, 1, 2, 3]
    assert all(a["ok"] is True and a["v"] == 1 for a in answers)


def test_oversized_length_is_refused_without_reading_the_body(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    make_server()
    # No body follows: the answer can only come from the header.
    envelope, closed = envelope_after(socket_path, header(MAX_FRAME + 1))
    assert "larger than the 16 MiB limit" in assert_protocol_error(envelope)
    assert closed
    assert handler.calls == 0


def test_empty_frame_is_refused_and_closes_the_connection(
    make_server: MakeServer, socket_path: Path
) -> None:
    make_server()
    envelope, closed = envelope_after(socket_path, header(0))
    assert "empty" in assert_protocol_error(envelope)
    assert closed


def test_truncated_frame_then_end_of_file_is_a_protocol_error(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    make_server()
    truncated = request_frame(1, {"op": "echo", "pad": "x" * 50})[:30]
    envelope, closed = envelope_after(socket_path, truncated, half_close=True)
    assert "middle of a frame" in assert_protocol_error(envelope)
    assert closed
    assert handler.calls == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"v":1,"id":1,"request":{"op":"echo","x":"' + SECRET.encode(), "not valid JSON"),
        (b"\xff" + SECRET.encode(), "not valid UTF-8"),
        (b'{"v":1,"id":1,"request":{"op":"echo","x":NaN}}', "non-finite"),
        (b'{"v":1,"id":1,"id":2,"request":{"op":"echo"}}', "repeats a key"),
        (b"[" * 50_000, "nested too deeply"),
    ],
)
def test_undecodable_frames_get_an_error_and_the_connection_closes(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler, body: bytes, message: str
) -> None:
    make_server()
    envelope, closed = envelope_after(socket_path, raw_frame(body))
    assert message in assert_protocol_error(envelope)
    assert closed
    assert handler.calls == 0


@pytest.mark.parametrize(
    ("envelope", "answer_id", "message"),
    [
        ({"v": 2, "id": 5, "request": {"op": "echo"}}, 5, "set v to 1"),
        ({"v": 1, "id": "a", "request": {"op": "echo"}, SECRET: SECRET}, "a", "unknown top-level"),
        ({"v": 1, "id": 6, "request": {"text": SECRET}}, 6, "has no op"),
        ({"v": 1, "id": [SECRET], "request": {"op": "echo"}}, None, "id is missing or invalid"),
        ([SECRET], None, "not a JSON object"),
    ],
)
def test_bad_envelopes_get_an_error_and_the_connection_stays_open(
    make_server: MakeServer,
    socket_path: Path,
    handler: ToyHandler,
    envelope: object,
    answer_id: object,
    message: str,
) -> None:
    make_server()
    with connect_raw(socket_path) as sock:
        reader = RawReader(sock)
        sock.sendall(encode_frame(envelope))
        assert message in assert_protocol_error(reader.value(), request_id=answer_id)
        sock.sendall(request_frame(9, {"op": "echo"}))
        answer = reader.value()
    assert answer["ok"] is True
    assert answer["id"] == 9
    assert handler.calls == 1


def test_handler_memories_error_keeps_its_code_and_message(
    make_server: MakeServer, socket_path: Path
) -> None:
    make_server()
    with IpcClient(socket_path) as client:
        with pytest.raises(NotFoundError, match="list cards with"):
            client.call({"op": "fail"})
        assert client.call({"op": "echo"})["request"] == {"op": "echo"}


@pytest.mark.parametrize("op", ["crash", "not_a_dict"])
def test_unexpected_handler_failure_is_an_internal_error_that_leaks_nothing(
    make_server: MakeServer, socket_path: Path, caplog: pytest.LogCaptureFixture, op: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="memories.ipc")
    make_server()
    with connect_raw(socket_path) as sock:
        reader = RawReader(sock)
        sock.sendall(request_frame(3, {"op": op}))
        envelope = reader.value()
        assert envelope == {
            "v": 1,
            "id": 3,
            "ok": False,
            "error": {"code": "error", "message": "internal error; see the daemon log"},
        }
        sock.sendall(request_frame(4, {"op": "echo"}))
        assert reader.value()["ok"] is True
    expected = "RuntimeError" if op == "crash" else "list"
    assert expected in caplog.text
    assert SECRET not in caplog.text


def test_response_that_cannot_be_framed_is_reported_to_the_caller(
    make_server: MakeServer, socket_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    make_server()
    with IpcClient(socket_path) as client:
        with pytest.raises(MemoriesError, match="cannot be encoded as JSON") as caught:
            client.call({"op": "unframeable"})
        assert caught.value.code == "protocol"
        assert client.call({"op": "echo"})["request"] == {"op": "echo"}
    assert SECRET not in caplog.text


def test_slow_handler_does_not_hold_up_other_connections(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    make_server()
    results: list[dict[str, Any]] = []

    def blocked_call() -> None:
        with IpcClient(socket_path) as client:
            results.append(client.call({"op": "block"}))

    thread = threading.Thread(target=blocked_call)
    thread.start()
    try:
        assert handler.entered.wait(5)
        with IpcClient(socket_path) as other:
            assert other.call({"op": "echo", "n": 1})["request"]["n"] == 1
        assert results == []  # the slow one is still waiting while the other was answered
    finally:
        handler.release.set()
        thread.join(5)
    assert results == [{"released": True}]


def test_seventeenth_connection_is_busy_while_sixteen_keep_working(
    make_server: MakeServer, socket_path: Path
) -> None:
    server = make_server()
    clients = [IpcClient(socket_path) for _ in range(16)]
    try:
        for n, client in enumerate(clients):
            assert client.call({"op": "echo", "n": n})["request"]["n"] == n
        assert server.connection_count == 16

        envelope, closed = envelope_after(socket_path, request_frame(1, {"op": "echo"}))
        assert envelope["ok"] is False
        assert envelope["error"] == {
            "code": "busy",
            "message": "the daemon is serving 16 connections; try again",
        }
        assert closed
        late = IpcClient(socket_path)
        with pytest.raises(BusyError, match="serving 16 connections"):
            late.call({"op": "echo"})

        for n, client in enumerate(clients):
            assert client.call({"op": "echo", "n": n + 100})["request"]["n"] == n + 100

        clients.pop().close()

        def admitted() -> dict[str, Any] | None:
            try:
                return late.call({"op": "echo", "late": True})
            except BusyError:
                return None

        assert wait_for(admitted, timeout=5)["request"]["late"] is True
        late.close()
    finally:
        for client in clients:
            client.close()
    wait_for(lambda: server.connection_count == 0, timeout=5)


def test_client_that_stalls_mid_frame_is_dropped_while_others_are_served(
    make_server: MakeServer, socket_path: Path
) -> None:
    make_server(frame_timeout=0.5)
    with connect_raw(socket_path) as stalled:
        started = time.monotonic()
        stalled.sendall(request_frame(1, {"op": "echo"})[:2])
        with IpcClient(socket_path) as other:
            for n in range(3):
                assert other.call({"op": "echo", "n": n})["request"]["n"] == n
        reader = RawReader(stalled)
        message = assert_protocol_error(reader.value())
        elapsed = time.monotonic() - started
        assert "did not arrive within 0.5 seconds" in message
        assert reader.at_eof()
    assert elapsed >= 0.45


def test_connection_idle_between_frames_is_closed(
    make_server: MakeServer, socket_path: Path
) -> None:
    server = make_server(idle_timeout=0.4)
    with connect_raw(socket_path) as sock:
        reader = RawReader(sock)
        started = time.monotonic()  # the idle clock can only start after this
        sock.sendall(request_frame(1, {"op": "echo"}))
        assert reader.value()["ok"] is True
        assert reader.at_eof()
        assert time.monotonic() - started >= 0.4
    wait_for(lambda: server.connection_count == 0, timeout=5)


def test_an_answer_larger_than_the_socket_buffer_arrives_whole_and_idle_still_closes(
    make_server: MakeServer, socket_path: Path
) -> None:
    server = make_server(idle_timeout=0.4)
    text = "y" * (4 * 1024 * 1024)  # far more than one send can put in the socket's buffer
    with connect_raw(socket_path) as sock:
        reader = RawReader(sock)
        sock.sendall(request_frame(1, {"op": "echo", "text": text}))
        assert reader.value()["response"]["request"]["text"] == text
        sock.sendall(request_frame(2, {"op": "echo", "n": 2}))
        assert reader.value()["response"]["request"]["n"] == 2
        # Closed by the idle timeout, not by the 10 s send deadline the big answer needed
        # (the reader gives up after 5 s).
        assert reader.at_eof()
    wait_for(lambda: server.connection_count == 0, timeout=5)


def test_peer_with_another_uid_is_denied(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    server = make_server(allowed_uid=other_uid())
    envelope, closed = envelope_after(socket_path, request_frame(1, {"op": "echo"}))
    assert envelope["ok"] is False
    assert envelope["id"] is None
    assert envelope["error"]["code"] == "denied"
    assert closed
    with IpcClient(socket_path) as client, pytest.raises(DeniedError, match="serves only"):
        client.call({"op": "echo"})
    assert handler.calls == 0
    assert server.connection_count == 0


# -- the socket file and its folder ------------------------------------------------------


def test_socket_is_0600_in_a_0700_runtime_folder_and_removed_on_stop(
    make_server: MakeServer, socket_path: Path
) -> None:
    assert not socket_path.parent.exists()
    server = make_server()
    assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)
    assert stat.S_IMODE(os.lstat(socket_path).st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(socket_path.parent).st_mode) == 0o700
    server.stop()
    assert not socket_path.exists()
    assert not server.running


def test_runtime_folder_open_to_others_is_refused(socket_path: Path, handler: ToyHandler) -> None:
    socket_path.parent.mkdir(mode=0o755)
    os.chmod(socket_path.parent, 0o755)  # noqa: S103 - the folder must be open to others
    with pytest.raises(DeniedError, match="chmod 700"):
        IpcServer(socket_path, handler).start()
    assert not socket_path.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_runtime_folder_owned_by_another_user_is_refused(
    socket_path: Path, handler: ToyHandler
) -> None:
    socket_path.parent.mkdir(mode=0o700)
    os.chown(socket_path.parent, other_uid(), -1)
    with pytest.raises(DeniedError, match="belongs to another user"):
        IpcServer(socket_path, handler).start()


def test_second_server_on_the_same_path_is_busy(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    make_server()
    with pytest.raises(BusyError, match="already serving"):
        IpcServer(socket_path, handler).start()
    with IpcClient(socket_path) as client:
        assert client.call({"op": "echo"})["request"] == {"op": "echo"}


def test_foreign_listener_on_the_path_is_busy_and_left_alone(
    socket_path: Path, handler: ToyHandler
) -> None:
    socket_path.parent.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(socket_path))
        listener.listen()
        with pytest.raises(BusyError, match="listening at"):
            IpcServer(socket_path, handler).start()
        assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)


def test_stale_socket_file_is_replaced(make_server: MakeServer, socket_path: Path) -> None:
    socket_path.parent.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(socket_path))  # left behind by a server that died
    os.chmod(socket_path, 0o640)  # marks the stale file; inode numbers may be reused
    make_server()
    assert stat.S_IMODE(os.lstat(socket_path).st_mode) == 0o600
    with IpcClient(socket_path) as client:
        assert client.call({"op": "echo"})["request"] == {"op": "echo"}


def test_non_socket_file_at_the_path_is_left_alone(socket_path: Path, handler: ToyHandler) -> None:
    socket_path.parent.mkdir(mode=0o700)
    socket_path.write_text("notes", encoding="utf-8")
    with pytest.raises(ConflictError, match="not a socket"):
        IpcServer(socket_path, handler).start()
    assert socket_path.read_text(encoding="utf-8") == "notes"


def test_stop_disconnects_clients_and_a_new_server_can_take_over(
    socket_path: Path, handler: ToyHandler
) -> None:
    first = IpcServer(socket_path, handler)
    with first, connect_raw(socket_path) as sock:
        reader = RawReader(sock)
        sock.sendall(request_frame(1, {"op": "echo"}))
        assert reader.value()["ok"] is True
        first.stop()
        assert reader.at_eof()
    assert not socket_path.exists()
    with IpcServer(socket_path, handler), IpcClient(socket_path) as client:
        assert client.call({"op": "echo"})["request"] == {"op": "echo"}


@pytest.mark.slow
def test_server_survives_a_stream_of_mutated_frames(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    server = make_server(frame_timeout=2.0)
    rng = random.Random(7)
    base = request_frame(1, {"op": "echo", "text": "fuzz ü"})
    started = time.monotonic()
    for _ in range(150):
        data = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(len(data))
            if rng.random() < 0.5:
                data[position] ^= 1 << rng.randrange(8)
            else:
                data[:4] = struct.pack(">I", rng.choice([0, 5, len(data), MAX_FRAME + 1]))
        with connect_raw(socket_path) as sock:
            sock.sendall(bytes(data))
            sock.shutdown(socket.SHUT_WR)
            while True:  # the server answers or closes; it never leaves the socket hanging
                try:
                    if not sock.recv(65536):
                        break
                except ConnectionResetError:
                    break
    assert time.monotonic() - started < 15
    with IpcClient(socket_path) as client:
        assert client.call({"op": "echo"})["request"] == {"op": "echo"}
    wait_for(lambda: server.connection_count == 0, timeout=5)
    assert handler.calls >= 1
