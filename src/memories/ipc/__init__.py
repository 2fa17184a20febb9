"""Local IPC: length-prefixed JSON frames carrying Wire v1 envelopes over a Unix socket."""

from __future__ import annotations

from memories.ipc.client import IpcClient
from memories.ipc.server import Handler, IpcServer, Peer
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
