"""Serving the intake: loopback policy, the listening socket, logging, and uvicorn.

Kept apart from the ASGI application in ``app.py`` so the request handling reads
on its own. ``serve`` is what ``urchin intake`` and ``urchin serve`` run.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import ipaddress
import logging
import signal
import socket
import threading
from collections.abc import Callable, Generator
from typing import Any, TextIO, cast

import uvicorn

from urchin.config import Settings
from urchin.errors import UrchinError, UsageError
from urchin.intake.app import create_app

__all__ = ["is_loopback_host", "log_config", "serve"]

log = logging.getLogger("urchin.intake")


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    name = host.strip().strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _listen_socket(host: str, port: int) -> socket.socket:
    name = host.strip().strip("[]")
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise UsageError(f"cannot resolve host {host!r}; pass an IP address or localhost") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise UrchinError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
            "is another intake running? Choose another port with --port"
        ) from exc
    return sock


class _StripQuery(logging.Filter):
    """Access log lines keep the path but not the query string (search text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], args[2].split("?", 1)[0], args[3], args[4])
        return True


class _TurnBatchedHandler(logging.StreamHandler[TextIO]):
    """A stream handler that writes the lines of one event-loop turn together.

    uvicorn logs one access line per request. Each write is a system call during
    which the commit thread takes the GIL, and the loop then waits to get it back.
    Lines logged on a running loop are queued and written at its next turn; lines
    from other threads, and whatever is queued at flush or close, go out at once.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self._queued: list[str] = []
        self._flush_on: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._queued.append(self.format(record) + self.terminator)
        except (TypeError, ValueError, KeyError):  # a record whose arguments do not format
            self.handleError(record)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if self._flush_on is not loop:
            self._flush_on = loop
            loop.call_soon(self.flush)

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._flush_on = None
            if self._queued:
                text = "".join(self._queued)
                self._queued.clear()
                try:
                    self.stream.write(text)
                except (OSError, ValueError):
                    # stderr is closed or gone: like StreamHandler, never stop the server
                    # over a log line, and there is nowhere left to report it.
                    return
            super().flush()


def log_config(level: str = "info") -> dict[str, Any]:
    """A uvicorn ``log_config``: everything on stderr, access lines without query strings."""
    handler = {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "plain"}
    access = {"()": _TurnBatchedHandler, "stream": "ext://sys.stderr", "formatter": "plain"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"strip_query": {"()": _StripQuery}},
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
        "handlers": {"stderr": handler, "access": {**access, "filters": ["strip_query"]}},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
            "urchin": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
        },
    }


class _PairedWrites:
    """A transport that sends an answer's head and body with one system call.

    uvicorn writes the status line and headers, then the body, each with its own
    ``write(2)``; for the small answers of the write paths the second call costs as
    much as the first and wakes the client twice. A write is held until the next one
    (both then go out together) or the end of the loop iteration, whichever comes first.
    """

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is None:
            self._held = data
            self._loop.call_soon(self._flush)
        else:
            self._held = None
            self._transport.writelines((held, data))

    def _flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _http_protocol() -> type[asyncio.Protocol] | str:
    """httptools (uvicorn's fastest parser) with paired writes; h11 where it is missing."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "h11"

    class Protocol(HttpToolsProtocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            paired = _PairedWrites(cast(asyncio.Transport, transport), self.loop)
            super().connection_made(cast(asyncio.Transport, paired))

    return Protocol


class _Server(uvicorn.Server):
    """uvicorn's server, minus re-raising the stop signal after a graceful shutdown.

    A SIGTERM or Ctrl-C that let every in-flight request finish is a clean stop,
    so the process exits 0 instead of dying of the signal afterwards.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        signals = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in signals}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def serve(
    settings: Settings,
    host: str = "127.0.0.1",
    port: int | None = None,
    *,
    access_log: bool = True,
    log_level: str = "info",
    background: Callable[[threading.Event], None] | None = None,
) -> None:
    """Run the intake until SIGINT or SIGTERM, letting in-flight requests finish.

    Applies no host policy: callers decide whether a non-loopback ``host`` is allowed.
    ``background`` runs in a thread beside the server; it must return soon after the
    event it is given is set, which happens once the server has stopped.

    Raises:
        UsageError: ``host`` cannot be resolved.
        ConfigError: a configured redaction pattern is invalid.
        UrchinError: the address cannot be bound (port in use, no permission).
    """
    port = settings.intake_port if port is None else port
    sock = _listen_socket(host, port)
    try:
        app = create_app(settings)
    except UrchinError:
        sock.close()
        raise
    config = uvicorn.Config(
        app,
        # What "auto" would pick today, named so that it cannot silently change.
        loop="uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
        http=_http_protocol(),
        log_config=log_config(log_level),
        access_log=access_log,
        server_header=False,
        proxy_headers=False,
        lifespan="on",
    )
    token = "required" if settings.intake_token else "not required"
    log.info(
        "intake on http://%s:%d, journal %s, token %s", host, port, settings.journal_path, token
    )
    stop = threading.Event()
    worker = None
    if background is not None:
        worker = threading.Thread(target=background, args=(stop,), name="urchin-background")
        worker.start()
    try:
        _Server(config).run(sockets=[sock])
    finally:
        stop.set()
        if worker is not None:
            worker.join()
    log.info("intake stopped")
