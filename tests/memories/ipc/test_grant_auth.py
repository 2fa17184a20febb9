"""Grant authentication on the IPC server: the first frame binds a connection to a grant."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memories.errors import (
    UNAUTHORIZED_MESSAGE,
    LockedError,
    NotFoundError,
    ProtocolError,
    UnauthorizedError,
)
from memories.ipc import IpcClient, IpcServer, Peer
from tests.memories.ipc.support import RawReader, connect_raw, request_frame

TOKEN = "mem_grant_" + "T" * 43
LOCKED_TOKEN = "mem_grant_" + "L" * 43


class Gatekeeper:
    """An authenticator that knows one token, and a handler that reports who is asking."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.revoked = False
        self._guard = threading.Lock()

    def authenticate(self, token: str) -> tuple[str, dict[str, Any]]:
        with self._guard:
            self.tokens.append(token)
        if token == LOCKED_TOKEN:
            raise LockedError("the vault is locked; run `memories unlock`")
        if token != TOKEN or self.revoked:
            raise UnauthorizedError()
        return "g-1", {"grant": {"id": "g-1", "name": "agent", "scope": "read"}}

    def handle(self, request: dict[str, Any], peer: Peer) -> dict[str, Any]:
        if request["op"] == "whoami":
            return {"principal": peer.principal}
        if request["op"] == "check":
            if peer.principal is not None and self.revoked:
                raise UnauthorizedError()
            return {"principal": peer.principal}
        if request["op"] == "refuse":
            raise UnauthorizedError()
        raise NotFoundError("unknown op")


MakeServer = Callable[..., IpcServer]


@pytest.fixture
def keeper() -> Gatekeeper:
    return Gatekeeper()


@pytest.fixture
def serve(socket_path: Path, keeper: Gatekeeper) -> Iterator[MakeServer]:
    servers: list[IpcServer] = []

    def make(*, authenticate: bool = True, **kwargs: Any) -> IpcServer:
        server = IpcServer(
            socket_path,
            keeper.handle,
            authenticate=keeper.authenticate if authenticate else None,
            **kwargs,
        )
        server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def auth(token: object, **extra: object) -> dict[str, Any]:
    return {"op": "grant_authenticate", "token": token, **extra}


def test_a_token_binds_the_connection_to_its_grant(
    serve: MakeServer, socket_path: Path, keeper: Gatekeeper
) -> None:
    serve()
    with IpcClient(socket_path, grant_token=TOKEN) as client:
        assert client.call({"op": "whoami"}) == {"principal": "g-1"}
        assert client.grant == {"id": "g-1", "name": "agent", "scope": "read"}
        assert client.call({"op": "whoami"}) == {"principal": "g-1"}
    assert keeper.tokens == [TOKEN]  # once per connection, not per request
    with IpcClient(socket_path) as local:
        assert local.call({"op": "whoami"}) == {"principal": None}
        assert local.grant is None


def test_a_wrong_token_is_unauthorized_and_the_connection_closes(
    serve: MakeServer, socket_path: Path
) -> None:
    serve()
    with connect_raw(socket_path) as sock:
        sock.sendall(request_frame(1, auth("mem_grant_wrong")))
        reader = RawReader(sock)
        envelope = reader.value()
        assert envelope["id"] == 1
        assert envelope["error"] == {"code": "unauthorized", "message": UNAUTHORIZED_MESSAGE}
        assert reader.at_eof()
    with IpcClient(socket_path, grant_token="mem_grant_wrong") as client:
        with pytest.raises(UnauthorizedError) as raised:
            client.call({"op": "whoami"})
        assert raised.value.message == UNAUTHORIZED_MESSAGE
        assert client.grant is None


def test_a_locked_store_refuses_authentication_and_closes(
    serve: MakeServer, socket_path: Path
) -> None:
    serve()
    with connect_raw(socket_path) as sock:
        sock.sendall(request_frame(1, auth(LOCKED_TOKEN)))
        reader = RawReader(sock)
        assert reader.value()["error"]["code"] == "locked"
        assert reader.at_eof()


@pytest.mark.parametrize(
    "request_",
    [
        auth(TOKEN, extra="x"),
        auth(42),
        auth(None),
        auth(""),
        auth("mem_grant_" + "x" * 600),
        {"op": "grant_authenticate"},
    ],
    ids=["extra field", "number", "null", "empty", "too long", "no token"],
)
def test_a_malformed_authentication_is_a_protocol_error_that_closes(
    serve: MakeServer, socket_path: Path, keeper: Gatekeeper, request_: dict[str, Any]
) -> None:
    serve()
    with connect_raw(socket_path) as sock:
        sock.sendall(request_frame(7, request_))
        reader = RawReader(sock)
        envelope = reader.value()
        assert envelope["error"]["code"] == "protocol"
        assert "x" * 20 not in envelope["error"]["message"]
        assert reader.at_eof()
    assert keeper.tokens == []


def test_authentication_comes_first_and_once(
    serve: MakeServer, socket_path: Path, keeper: Gatekeeper
) -> None:
    serve()
    for first in (auth(TOKEN), {"op": "whoami"}):
        with connect_raw(socket_path) as sock:
            sock.sendall(request_frame(1, first) + request_frame(2, auth(TOKEN)))
            reader = RawReader(sock)
            assert reader.value()["ok"] is True
            second = reader.value()
            assert second["id"] == 2
            assert second["error"]["code"] == "protocol"
            assert reader.at_eof()
    assert keeper.tokens == [TOKEN]


def test_a_server_without_an_authenticator_takes_no_token(
    serve: MakeServer, socket_path: Path
) -> None:
    serve(authenticate=False)
    with IpcClient(socket_path, grant_token=TOKEN) as client, pytest.raises(UnauthorizedError):
        client.call({"op": "whoami"})
    with IpcClient(socket_path) as local:
        assert local.call({"op": "whoami"}) == {"principal": None}


def test_an_unauthorized_answer_closes_a_grant_connection_and_the_client_tries_afresh(
    serve: MakeServer, socket_path: Path, keeper: Gatekeeper
) -> None:
    serve()
    with IpcClient(socket_path, grant_token=TOKEN) as client:
        assert client.call({"op": "check"}) == {"principal": "g-1"}
        keeper.revoked = True
        with connect_raw(socket_path) as sock:
            # What the client sees on the wire: the answer, then the end of the connection.
            sock.sendall(request_frame(1, auth(TOKEN)))
            assert RawReader(sock).value()["error"]["code"] == "unauthorized"
        with pytest.raises(UnauthorizedError):
            client.call({"op": "check"})
        with pytest.raises(UnauthorizedError):
            client.call({"op": "check"})  # a new connection, refused at authentication
    assert keeper.tokens.count(TOKEN) == 3


def test_a_local_connection_stays_open_after_an_unauthorized_error(
    serve: MakeServer, socket_path: Path
) -> None:
    serve()
    with connect_raw(socket_path) as sock:
        sock.sendall(request_frame(1, {"op": "refuse"}))
        reader = RawReader(sock)
        assert reader.value()["error"]["code"] == "unauthorized"
        sock.sendall(request_frame(2, {"op": "whoami"}))
        assert reader.value() == {"v": 1, "id": 2, "ok": True, "response": {"principal": None}}


def test_tokens_never_reach_the_log(
    serve: MakeServer, socket_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    serve()
    with IpcClient(socket_path, grant_token=TOKEN) as client:
        client.call({"op": "whoami"})
    with (
        IpcClient(socket_path, grant_token=TOKEN + "x") as client,
        pytest.raises(UnauthorizedError),
    ):
        client.call({"op": "whoami"})
    serve_without = IpcServer(socket_path.with_name("other.sock"), lambda r, p: {})
    client = IpcClient(serve_without.socket_path, grant_token=TOKEN)
    with serve_without, client, pytest.raises(UnauthorizedError):
        client.call({"op": "whoami"})
    assert "refused a grant token" in caplog.text
    assert "T" * 20 not in caplog.text


def test_a_protocol_error_in_authentication_does_not_leak_the_token_to_the_client(
    serve: MakeServer, socket_path: Path
) -> None:
    serve()
    with IpcClient(socket_path, grant_token="mem_grant_" + "S" * 600) as client:
        with pytest.raises(ProtocolError) as raised:
            client.call({"op": "whoami"})
        assert "S" * 10 not in raised.value.message
        assert "S" * 10 not in repr(client.__dict__.get("grant"))
