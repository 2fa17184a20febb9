"""stdin and stdout as event-loop pipes, for a stdio MCP server that answers without threads.

The SDK's stdio transport reads and writes through ``anyio.wrap_file``: every line read,
every write and every flush is a hop to a worker thread and back, three or four per tool
call. When the client talks to us over pipes or sockets (as every agent does), the event
loop can watch the descriptors itself; :func:`claimed_stdio` hands the SDK line streams
that do exactly that.

While serving, descriptor 0 reads the null device and descriptor 1 writes to stderr (as the
SDK's own transport arranges), so a stray ``print`` or a child process cannot corrupt the
protocol stream; both are put back, in blocking mode, when serving ends. A terminal or a
regular file on either side, or one socket for both, is left to the SDK's transport
(``None``): putting a shared terminal into non-blocking mode would leak into the shell after
we exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator
from typing import Final

__all__ = ["MAX_LINE", "LineReader", "LineWriter", "claimed_stdio"]

log = logging.getLogger(__name__)

#: The longest protocol line read; the daemon's frames are capped at the same size.
MAX_LINE: Final = 16 * 1024 * 1024

# What an over-long line turns into: not JSON, so the SDK's parser refuses it and serving goes on.
_REFUSED_LINE: Final = "\x00 line longer than the limit\n"


class LineReader:
    """The lines of a pipe, decoded as UTF-8 (undecodable bytes replaced), as the SDK reads."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:
            if not end.partial:
                raise StopAsyncIteration from None
            line = end.partial
        except asyncio.LimitOverrunError:
            await self._skip_line()
            return _REFUSED_LINE
        return line.decode("utf-8", errors="replace")

    async def _skip_line(self) -> None:
        """Drop the rest of an over-long line without holding it in memory."""
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as over:
                await self._reader.readexactly(over.consumed)
            except asyncio.IncompleteReadError:
                return


class LineWriter:
    """Text written to a pipe; ``flush`` waits while the reader is behind.

    A client that stops reading has gone away, which is no error of ours: what is written
    after that is dropped, and the session ends when its stdin closes.
    """

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        if not self._writer.transport.is_closing():
            self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        try:
            await self._writer.drain()
        except ConnectionError:  # a broken pipe or a reset: the client is gone
            log.debug("the client stopped reading; answers are dropped until stdin closes")


def _servable(fd_in: int, fd_out: int) -> bool:
    """Whether the loop can serve these descriptors: each a pipe or a socket, and not one
    socket for both directions (inetd-style), whose incoming bytes the write side's transport
    would take for the peer hanging up."""
    try:
        seen_in, seen_out = os.fstat(fd_in), os.fstat(fd_out)
    except OSError:
        return False
    if (seen_in.st_dev, seen_in.st_ino) == (seen_out.st_dev, seen_out.st_ino):
        return False
    return all(stat.S_ISFIFO(s.st_mode) or stat.S_ISSOCK(s.st_mode) for s in (seen_in, seen_out))


@contextlib.asynccontextmanager
async def claimed_stdio() -> AsyncIterator[tuple[LineReader, LineWriter] | None]:
    """Descriptors 0 and 1 as a :class:`LineReader` and a :class:`LineWriter`.

    Yields None (and claims nothing) when either is not a pipe or a socket, or both are one
    socket.
    """
    if not _servable(0, 1):
        yield None
        return
    loop = asyncio.get_running_loop()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    # Duplicates the transports never close, to put the wire back on 0 and 1 afterwards.
    keep_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    keep_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.BaseTransport | None = None
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(wire_in, "rb", buffering=0),
        )
        write_transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop),
            os.fdopen(wire_out, "wb", buffering=0),
        )
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        yield LineReader(reader), LineWriter(writer)
    finally:
        for transport in (write_transport, read_transport):
            if transport is not None:
                transport.close()
        for kept, fd in ((keep_in, 0), (keep_out, 1)):
            # The pipe is shared with the client: leave it blocking, as we found it.
            os.set_blocking(kept, True)
            os.dup2(kept, fd)
            os.close(kept)
