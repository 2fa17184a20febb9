"""The MCP server's one connection to the daemon, opened on the first tool call.

Start-up never touches the daemon: ``initialize`` and ``tools/list`` are answered from what
the server process already holds. The first call that needs the vault finds the daemon (and
starts it, as the CLI does, unless autostart is off) and authenticates every connection with
the client's grant token. Requests go out as the typed request models of
:mod:`memories.service.requests`; the daemon's ``authorize()`` decides whether the grant
allows each one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread

if TYPE_CHECKING:
    from memories.config import Settings
    from memories.ipc.client import IpcClient
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
        self._client: IpcClient | None = None
        self._guard = threading.Lock()

    def _connect(self) -> IpcClient:
        with self._guard:
            if self._client is None:
                from memories.daemon.launcher import connect
                from memories.ipc.client import IpcClient

                settings = self._settings_of()
                # connect() starts the daemon when none listens; it opens no connection itself.
                connect(settings, autostart=self._autostart, timeout=self._timeout).close()
                self._client = IpcClient(
                    settings.socket_path, timeout=self._timeout, grant_token=self._token
                )
            return self._client

    def call_blocking(self, request: RequestModel) -> dict[str, Any]:
        """Send ``request`` and return the daemon's answer (in the calling thread).

        Raises:
            MemoriesError: the subclass the daemon reported (``UnauthorizedError`` for a
                wrong, revoked or expired token, ``DeniedError`` for a request the grant does
                not allow, ``NotFoundError`` for a vault outside it, ``LockedError``), or
                ``UnavailableError`` when the daemon cannot be reached or started.
        """
        return self._connect().call(wire_request(request))

    async def call(self, request: RequestModel) -> dict[str, Any]:
        """:meth:`call_blocking` in a worker thread, so the event loop keeps serving."""
        return await anyio.to_thread.run_sync(self.call_blocking, request)

    def close(self) -> None:
        """Close the connection, if one is open. Never raises."""
        with self._guard:
            client, self._client = self._client, None
        if client is not None:
            client.close()
