"""The IPC client for an asyncio event loop: Wire v1 on the daemon's socket, no worker thread.

:class:`~memories.ipc.client.IpcClient` blocks its caller; a server that runs on an event
loop (``memories mcp``) would have to hand every call to a thread and back, two wake-ups
per request. This client lets the loop watch the socket itself. It keeps the blocking
client's rules: one request at a time per connection, a connection the daemon has closed
(or written to unasked) is replaced before a request is sent on it, a request whose answer
never arrives is not retried, and with a ``grant_token`` every new connection
authenticates first. Errors are the blocking client's, word for word.
"""

from __future__ import annotations

import asyncio
import collections
import select
from pathlib import Path
from typing import Any

from memories.errors import ProtocolError
from memories.ipc.client import (
    MALFORMED,
    ClientBase,
    answer_of,
    auth_frame,
    connect_failed,
    connection_lost,
    granted,
    timed_out,
)
from memories.ipc.wire import (
    WIRE_VERSION,
    FrameDecoder,
    encode_frame,
    parse_response,
    unix_socket_address,
)

__all__ = ["AsyncIpcClient"]


class _Frames(asyncio.Protocol):
    """Decodes the daemon's frames as they arrive and wakes the one waiting caller."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.values: collections.deque[object] = collections.deque()
        self.closed = False
        self.malformed = False
        self._decoder = FrameDecoder()
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.values.extend(self._decoder.feed(data))
        except ProtocolError:
            self.malformed = True
            if self.transport is not None:
                self.transport.close()
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    def usable(self) -> bool:
        """Open, and nothing arrived that nobody asked for.

        The socket itself is asked too: the loop may not have run since the daemon closed
        an idle connection, and a request sent then would be lost.
        """
        if self.closed or self.malformed or self.values or self._decoder.pending:
            return False
        sock = None if self.transport is None else self.transport.get_extra_info("socket")
        if sock is None:
            return False
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return not poller.poll(0)  # readable between requests: closed, or unasked bytes

    async def next_value(self) -> object:
        while not self.values:
            if self.malformed:
                raise ProtocolError(MALFORMED)
            if self.closed:
                raise connection_lost()
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self.values.popleft()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class AsyncIpcClient(ClientBase):
    """Call the memories daemon listening at ``socket_path`` from a coroutine.

    ``timeout`` bounds each call from connecting to the last byte of the answer. Concurrent
    calls are served one after another on the one connection.
    """

    def __init__(
        self, socket_path: Path, *, timeout: float = 30.0, grant_token: str | None = None
    ) -> None:
        super().__init__(socket_path, timeout=timeout, grant_token=grant_token)
        self._frames: _Frames | None = None
        self._lock = asyncio.Lock()

    async def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return the daemon's response object.

        Raises:
            ProtocolError: the request cannot be framed (nothing is sent), or the daemon's
                answer is malformed.
            UnavailableError: no daemon is listening, the connection broke before the answer
                arrived (the request may or may not have been carried out), or the call took
                longer than the timeout.
            UnauthorizedError: with a grant token, the token is wrong, revoked or expired
                (the connection is closed; the next call tries again).
            MemoriesError: the subclass for the error the daemon reported, rebuilt from its
                code.
        """
        async with self._lock:
            request_id = self._new_id()
            frame = encode_frame({"v": WIRE_VERSION, "id": request_id, "request": request})
            answered = False
            try:
                async with asyncio.timeout(self._timeout):
                    frames = await self._connection()
                    value = await self._exchange(frames, frame)
                answered = True
            except TimeoutError as exc:
                raise timed_out(self._timeout) from exc
            finally:
                if not answered:  # a half-finished exchange leaves the stream out of step
                    self._disconnect()
            return answer_of(value, request_id, self._disconnect)

    def close(self) -> None:
        """Close the connection, if one is open. Never raises."""
        self._disconnect()

    async def _connection(self) -> _Frames:
        if self._frames is not None and self._frames.usable():
            return self._frames
        self._disconnect()
        loop = asyncio.get_running_loop()
        address = unix_socket_address(self.socket_path)
        try:
            _, frames = await loop.create_unix_connection(_Frames, address)
        except OSError as exc:
            raise connect_failed(self.socket_path, exc) from exc
        self._frames = frames
        if self._grant_token is not None:
            await self._authenticate(frames, self._grant_token)
        return frames

    async def _authenticate(self, frames: _Frames, token: str) -> None:
        auth_id = self._new_id()
        authenticated = False
        try:
            value = await self._exchange(frames, auth_frame(auth_id, token))
            self.grant = granted(parse_response(value, expected_id=auth_id))
            authenticated = True
        finally:
            if not authenticated:
                self._disconnect()

    async def _exchange(self, frames: _Frames, frame: bytes) -> object:
        transport = frames.transport
        if transport is None or transport.is_closing():
            raise connection_lost()
        # A refusal (busy, denied) may close the connection before our bytes are read; its
        # error envelope still arrives, so a failed write is not an error by itself.
        transport.write(frame)
        return await frames.next_value()

    def _disconnect(self) -> None:
        frames, self._frames = self._frames, None
        if frames is not None and frames.transport is not None:
            frames.transport.close()
