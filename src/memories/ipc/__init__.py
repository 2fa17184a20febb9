"""Local IPC: length-prefixed JSON frames carrying Wire v1 envelopes over a Unix socket."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memories.ipc.client import IpcClient
from memories.ipc.wire import (
    MAX_FRAME,
    WIRE_VERSION,
    FrameDecoder,
    WireRequest,
    decode_body,
    encode_frame,
    envelope_id,
    error_envelope,
    ok_envelope,
    parse_request,
    parse_response,
)

if TYPE_CHECKING:
    from memories.ipc.server import Handler, IpcServer, Peer


def __getattr__(name: str) -> Any:
    # One-shot CLI processes only need the client: the server and its loop load on first use.
    if name in ("Handler", "IpcServer", "Peer"):
        from memories.ipc import server

        return getattr(server, name)
    raise AttributeError(name)


__all__ = [
    "MAX_FRAME",
    "WIRE_VERSION",
    "FrameDecoder",
    "Handler",
    "IpcClient",
    "IpcServer",
    "Peer",
    "WireRequest",
    "decode_body",
    "encode_frame",
    "envelope_id",
    "error_envelope",
    "ok_envelope",
    "parse_request",
    "parse_response",
]
