"""Fixtures for driving the real ``memories mcp`` over stdio with the official MCP client,
against a real daemon in the test's own home.

``store`` makes an unlocked store (its daemon is stopped at teardown, so none outlives the
test); ``grant`` mints a token through ``memories grant create``; ``connect`` spawns
``memories mcp`` with a token and yields a :class:`Client` on an initialized session.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent
from tests.memories.cli.conftest import FLOOR_KDF, PASSWORD, Memories, stop_daemon
from tests.support import script

from memories.config import load_settings
from memories.ipc.client import IpcClient

__all__ = ["Client", "Owner", "server_env", "text_of"]

HOME_VARIABLES = (
    "HOME",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "MEMORIES_HOME",
    "PATH",
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def memories(monkeypatch: pytest.MonkeyPatch) -> Iterator[Memories]:
    """The console script with MEMORIES_PASSWORD set; stops the daemon afterwards."""
    monkeypatch.setenv("MEMORIES_PASSWORD", PASSWORD)
    try:
        yield Memories()
    finally:
        stop_daemon()


@pytest.fixture
def store(memories: Memories) -> Memories:
    """A fresh, unlocked store whose daemon runs until the test ends."""
    result = memories("init", *FLOOR_KDF, "--user-name", "Ada", "--json")
    assert result.code == 0, result.stderr
    return memories


class Owner:
    """The vault's owner talking to the daemon over IPC from the test process: seeding
    content and minting grants without paying a CLI start-up for each."""

    def __init__(self, client: IpcClient) -> None:
        self.client = client
        self._grants = 0

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        return self.client.call(request)

    def put(self, title: str, body: str = "", **fields: Any) -> str:
        """A new memory (or, with ``card_type``, a card); returns its short id."""
        if "card_type" in fields:
            saved = self.call({"op": "card_put", "title": title, "body": body, **fields})
        else:
            saved = self.call({"op": "put", "title": title, "body": body, **fields})
        return str(saved["short_id"])

    def grant(
        self,
        scope: str,
        *vaults: str,
        name: str | None = None,
        expires_seconds: int | None = None,
    ) -> str:
        """Mint a grant (elevating first, as minting needs) and return its token."""
        self._grants += 1
        self.call({"op": "sudo", "password": PASSWORD})
        request: dict[str, Any] = {
            "op": "grant_create",
            "name": name or f"grant {self._grants}",
            "scope": scope,
            "vaults": list(vaults),
        }
        if expires_seconds is not None:
            request["expires_seconds"] = expires_seconds
        return str(self.call(request)["token"])


@pytest.fixture
def owner(store: Memories) -> Iterator[Owner]:
    """An IPC connection to the store's daemon, as its owner."""
    del store
    with IpcClient(load_settings().socket_path, timeout=60) as client:
        yield Owner(client)


@pytest.fixture
def grant(store: Memories) -> Callable[..., str]:
    """Mint a grant with ``memories grant create`` (after ``sudo``) and return its token."""
    made = 0

    def create(scope: str, *vaults: str, name: str | None = None, expires: str = "") -> str:
        nonlocal made
        made += 1
        store.ok("sudo")
        args = ["grant", "create", "--name", name or f"client {made}", "--scope", scope]
        for vault in vaults:
            args += ["--vault", vault]
        if expires:
            args += ["--expires", expires]
        doc = store.ok(*args)
        token = doc["token"]
        assert isinstance(token, str)
        return token

    return create


def text_of(result: CallToolResult) -> str:
    """The one text block of a tool result."""
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


class Client:
    """An initialized MCP session with helpers that decode our JSON results."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        #: Every byte of every tool or resource answer this client received, for leak checks.
        self.received: list[str] = []

    async def raw(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        result = await self.session.call_tool(name, arguments or {})
        self.received.append(result.model_dump_json())
        return result

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must succeed; returns its JSON payload."""
        result = await self.raw(name, arguments)
        assert not result.is_error, text_of(result)
        payload = json.loads(text_of(result))
        assert result.structured_content is None  # the JSON goes once, as text
        assert isinstance(payload, dict)
        return payload

    async def fail(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Call a tool that must fail; returns its message."""
        result = await self.raw(name, arguments)
        assert result.is_error, text_of(result)
        return text_of(result)


def server_env(token: str | None, **extra: str) -> dict[str, str]:
    """The environment `memories mcp` gets: the test's home, no password, the token."""
    env = {name: os.environ[name] for name in HOME_VARIABLES if name in os.environ}
    if token is not None:
        env["MEMORIES_MCP_TOKEN"] = token
    return env | extra


@pytest.fixture
def connect(tmp_path: Path) -> Callable[..., AbstractAsyncContextManager[Client]]:
    """Spawn ``memories mcp`` with ``token`` and open an initialized client session to it."""
    log = tmp_path / "mcp-stderr.log"

    @asynccontextmanager
    async def open_client(token: str | None, *args: str, **env: str) -> AsyncIterator[Client]:
        params = StdioServerParameters(
            command=script("memories"), args=["mcp", *args], env=server_env(token, **env)
        )
        with log.open("a", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, read_timeout_seconds=60) as session,
            ):
                info = await session.initialize()
                assert info.server_info.name == "memories"
                yield Client(session)

    return open_client
