"""The IPC client: lazy connection, clear unavailability, local refusals, broken daemons."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memories.errors import ProtocolError, UnavailableError
from memories.ipc import MAX_FRAME, IpcClient, IpcServer, encode_frame
from tests.memories.ipc.support import BROKEN_ANSWERS, ONE_CALL, SECRET, ToyHandler
from tests.support import wait_for

MakeServer = Callable[..., IpcServer]
FakeDaemon = Callable[..., None]
OneCall = Callable[[Path, dict[str, Any]], dict[str, Any]]


@pytest.mark.parametrize("call", ONE_CALL)
def test_no_socket_file_means_no_daemon(socket_path: Path, call: OneCall) -> None:
    with pytest.raises(UnavailableError) as caught:
        call(socket_path, {"op": "status"})
    assert caught.value.message == (
        f"no memories daemon is listening at {socket_path}; start it with `memories daemon start`"
    )


@pytest.mark.parametrize("call", ONE_CALL)
def test_socket_file_without_a_listener_means_no_daemon(socket_path: Path, call: OneCall) -> None:
    socket_path.parent.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(socket_path))
    with pytest.raises(UnavailableError, match="daemon start"):
        call(socket_path, {"op": "status"})


def test_request_that_cannot_be_framed_is_refused_before_connecting(socket_path: Path) -> None:
    # No daemon exists, so a ProtocolError (not UnavailableError) proves nothing was sent.
    with IpcClient(socket_path) as client:
        with pytest.raises(ProtocolError, match="larger than the 16 MiB limit"):
            client.call({"op": "put", "body": "x" * MAX_FRAME})
        with pytest.raises(ProtocolError, match="cannot be encoded"):
            client.call({"op": "put", "body": {SECRET}})


def test_oversized_request_never_reaches_a_running_daemon(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    make_server()
    with IpcClient(socket_path) as client:
        with pytest.raises(ProtocolError):
            client.call({"op": "echo", "body": "é" * (MAX_FRAME // 2)})
        assert client.call({"op": "echo"})["request"] == {"op": "echo"}
    assert handler.calls == 1


def test_slow_answer_times_out_as_unavailable_and_the_client_recovers(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    make_server()
    with IpcClient(socket_path, timeout=0.3) as client:
        with pytest.raises(UnavailableError, match=r"did not answer within 0\.3 seconds"):
            client.call({"op": "block"})
        handler.release.set()
        assert client.call({"op": "echo"})["request"] == {"op": "echo"}


def test_a_call_can_wait_longer_than_the_client_timeout(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    make_server()
    with IpcClient(socket_path, timeout=0.2) as client:
        answered: list[dict[str, object]] = []
        worker = threading.Thread(
            target=lambda: answered.append(client.call({"op": "block"}, timeout=10))
        )
        worker.start()
        assert handler.entered.wait(timeout=5)
        # Well past the client's own 0.2 s, the call is still waiting for its answer.
        assert not wait_for_answer(answered, seconds=0.5)
        handler.release.set()
        worker.join(timeout=10)
        assert answered == [{"released": True}]
        handler.release.clear()
        with pytest.raises(UnavailableError, match=r"within 0\.2 seconds"):
            client.call({"op": "block"})
        handler.release.set()


def wait_for_answer(answered: list[dict[str, object]], seconds: float) -> bool:
    """Whether an answer arrives within ``seconds`` (a bounded wait on a condition)."""
    try:
        wait_for(lambda: answered, timeout=seconds)
    except AssertionError:
        return False
    return True


def test_client_reconnects_after_the_daemon_closes_an_idle_connection(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    server = make_server(idle_timeout=0.3)
    with IpcClient(socket_path) as client:
        assert client.call({"op": "echo", "n": 1})["request"]["n"] == 1
        wait_for(lambda: server.connection_count == 0, timeout=5)
        assert client.call({"op": "echo", "n": 2})["request"]["n"] == 2
    assert handler.calls == 2


def test_daemon_stopping_between_calls_makes_the_client_unavailable(
    socket_path: Path, handler: ToyHandler
) -> None:
    server = IpcServer(socket_path, handler)
    with server, IpcClient(socket_path) as client:
        client.call({"op": "echo"})
        server.stop()
        with pytest.raises(UnavailableError, match="daemon start"):
            client.call({"op": "echo"})


# -- a daemon that misbehaves ------------------------------------------------------------


def _id(request: object) -> object:
    assert isinstance(request, dict)
    return request["id"]


@pytest.mark.parametrize(("reply", "error", "message"), BROKEN_ANSWERS)
def test_broken_answers_are_clear_errors(
    fake_daemon: FakeDaemon,
    socket_path: Path,
    reply: Callable[[object], bytes],
    error: type[Exception],
    message: str,
) -> None:
    fake_daemon(reply, once=True)
    with IpcClient(socket_path, timeout=5) as client, pytest.raises(error, match=message) as caught:
        client.call({"op": "status"})
    assert SECRET not in str(caught.value)


def test_client_sends_incrementing_ids_and_returns_matching_responses(
    fake_daemon: FakeDaemon, socket_path: Path
) -> None:
    seen: list[object] = []

    def answer(request: object) -> bytes:
        seen.append(request)
        return encode_frame({"v": 1, "id": _id(request), "ok": True, "response": {"n": len(seen)}})

    fake_daemon(answer)
    with IpcClient(socket_path, timeout=5) as client:
        assert client.call({"op": "a"}) == {"n": 1}
        assert client.call({"op": "b", "k": [1]}) == {"n": 2}
    assert seen == [
        {"v": 1, "id": 1, "request": {"op": "a"}},
        {"v": 1, "id": 2, "request": {"op": "b", "k": [1]}},
    ]
