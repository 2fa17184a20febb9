"""The MCP server's one connection to the daemon, opened on the first tool call.

Start-up never touches the daemon: ``initialize`` and ``tools/list`` are answered from what
the server process already holds. The first call that needs the vault finds the daemon (and
starts it, as the CLI does, unless autostart is off; in a worker thread, as that may take
seconds) and authenticates every connection with the client's grant token. Calls then go
over an :class:`~memories.ipc.async_client.AsyncIpcClient` on the server's own event loop.
Requests go out as the typed request models of :mod:`memories.service.requests`; the
daemon's ``authorize()`` decides whether the grant allows each one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

if TYPE_CHECKING:
    from memories.config import Settings
    from memories.ipc.async_client import AsyncIpcClient
    from memories.service.requests import RequestModel

__all__ = ["DaemonLink", "wire_request"]


def wire_request(request: RequestModel) -> dict[str, Any]:
    """The wire object for ``request``: fields left at their default are left out."""
    return request.model_dump(mode="json", exclude_defaults=True)


class DaemonLink:
    """A lazily opened, token-authenticated daemon connection.

    ``settings`` is a function so the configuration, too, is read on first use (a bad config
    file is reported by the first tool call, not by a server that never starts).
    """

    def __init__(
        self,
        settings: Callable[[], Settings],
        token: str,
        *,
        autostart: bool = True,
        timeout: float = 60.0,
    ) -> None:
        self._settings_of = settings
        self._token = token
        self._autostart = autostart
        self._timeout = timeout
        self._client: AsyncIpcClient | None = None
        self._guard = anyio.Lock()

    async def _connect(self) -> AsyncIpcClient:
        async with self._guard:
            if self._client is None:
                self._client = await anyio.to_thread.run_sync(self._find_daemon)
            return self._client

    def _find_daemon(self) -> AsyncIpcClient:
        from memories.daemon.launcher import connect
        from memories.ipc.async_client import AsyncIpcClient

        settings = self._settings_of()
        # connect() starts the daemon when none listens; it opens no connection itself.
        connect(settings, autostart=self._autostart, timeout=self._timeout).close()
        return AsyncIpcClient(settings.socket_path, timeout=self._timeout, grant_token=self._token)

    async def call(self, request: RequestModel) -> dict[str, Any]:
        """Send ``request`` and return the daemon's answer.

        Raises:
            MemoriesError: the subclass the daemon reported (``UnauthorizedError`` for a
                wrong, revoked or expired token, ``DeniedError`` for a request the grant does
                not allow, ``NotFoundError`` for a vault outside it, ``LockedError``), or
                ``UnavailableError`` when the daemon cannot be reached or started.
        """
        client = await self._connect()
        return await client.call(wire_request(request))

    def close(self) -> None:
        """Close the connection, if one is open. Never raises."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
