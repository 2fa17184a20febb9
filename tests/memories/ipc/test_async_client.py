"""The event-loop IPC client: the blocking client's rules, errors and recovery, on asyncio."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from memories.errors import NotFoundError, ProtocolError, UnauthorizedError, UnavailableError
from memories.ipc import MAX_FRAME, IpcServer
from memories.ipc.async_client import AsyncIpcClient
from tests.memories.ipc.support import BROKEN_ANSWERS, SECRET, ToyHandler
from tests.memories.ipc.test_grant_auth import TOKEN, Gatekeeper

MakeServer = Callable[..., IpcServer]


# Refusals without a daemon: tests/memories/ipc/test_client.py runs them for both clients.


def test_a_request_that_cannot_be_framed_is_refused_before_connecting(socket_path: Path) -> None:
    client = AsyncIpcClient(socket_path)  # no daemon: a ProtocolError proves nothing was sent
    with pytest.raises(ProtocolError, match="larger than the 16 MiB limit"):
        asyncio.run(client.call({"op": "put", "body": "x" * MAX_FRAME}))


def test_calls_answer_in_order_and_daemon_errors_keep_their_type(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    make_server()

    async def calls() -> list[object]:
        client = AsyncIpcClient(socket_path, timeout=5)
        try:
            together = await asyncio.gather(
                *(client.call({"op": "echo", "n": n}) for n in range(8))
            )
            with pytest.raises(NotFoundError, match="no such card"):
                await client.call({"op": "fail"})
            return [answer["request"]["n"] for answer in together]
        finally:
            client.close()

    assert asyncio.run(calls()) == list(range(8))
    assert handler.calls == 9


def test_a_slow_answer_times_out_as_unavailable_and_the_client_recovers(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    make_server()

    async def calls() -> object:
        client = AsyncIpcClient(socket_path, timeout=0.3)
        try:
            with pytest.raises(UnavailableError, match=r"did not answer within 0\.3 seconds"):
                await client.call({"op": "block"})
            handler.release.set()
            return (await client.call({"op": "echo"}))["request"]
        finally:
            client.close()

    assert asyncio.run(calls()) == {"op": "echo"}


def test_the_client_reconnects_after_the_daemon_closes_an_idle_connection(
    make_server: MakeServer, socket_path: Path, handler: ToyHandler
) -> None:
    server = make_server(idle_timeout=0.3)

    async def calls() -> list[object]:
        client = AsyncIpcClient(socket_path, timeout=5)
        try:
            first = await client.call({"op": "echo", "n": 1})
            while server.connection_count:  # bounded by the idle timeout
                await asyncio.sleep(0.02)
            second = await client.call({"op": "echo", "n": 2})
            return [first["request"]["n"], second["request"]["n"]]
        finally:
            client.close()

    assert asyncio.run(asyncio.wait_for(calls(), timeout=10)) == [1, 2]
    assert handler.calls == 2


def test_a_daemon_stopping_between_calls_makes_the_client_unavailable(
    socket_path: Path, handler: ToyHandler
) -> None:
    server = IpcServer(socket_path, handler)

    async def calls() -> None:
        client = AsyncIpcClient(socket_path, timeout=5)
        try:
            await client.call({"op": "echo"})
            server.stop()  # blocks the loop: the client learns of the close from the socket
            with pytest.raises(UnavailableError, match="daemon start"):
                await client.call({"op": "echo"})
        finally:
            client.close()

    with server:
        asyncio.run(asyncio.wait_for(calls(), timeout=10))


@pytest.mark.parametrize(("reply", "error", "message"), BROKEN_ANSWERS)
def test_broken_answers_are_clear_errors(
    fake_daemon: Callable[..., None],
    socket_path: Path,
    reply: Callable[[dict[str, int]], bytes],
    error: type[Exception],
    message: str,
) -> None:
    fake_daemon(reply, once=True)
    with pytest.raises(error, match=message) as caught:
        asyncio.run(AsyncIpcClient(socket_path, timeout=5).call({"op": "status"}))
    assert SECRET not in str(caught.value)


def test_a_grant_token_authenticates_each_new_connection(socket_path: Path) -> None:
    keeper = Gatekeeper()
    server = IpcServer(socket_path, keeper.handle, authenticate=keeper.authenticate)

    async def calls() -> tuple[object, object]:
        client = AsyncIpcClient(socket_path, timeout=5, grant_token=TOKEN)
        wrong = AsyncIpcClient(socket_path, timeout=5, grant_token="mem_grant_wrong")
        try:
            asked = await client.call({"op": "whoami"})
            with pytest.raises(UnauthorizedError) as caught:
                await wrong.call({"op": "whoami"})
            assert "mem_grant_wrong" not in str(caught.value)
            return asked["principal"], client.grant
        finally:
            client.close()
            wrong.close()

    with server:
        principal, grant = asyncio.run(calls())
    assert principal == "g-1"
    assert grant == {"id": "g-1", "name": "agent", "scope": "read"}
    assert keeper.tokens == [TOKEN, "mem_grant_wrong"]
