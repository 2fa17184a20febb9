"""Local IPC framing and the Wire v1 envelope.

A frame is a 4-byte big-endian unsigned length followed by that many bytes of UTF-8 JSON. The
length is checked before the body is read, so an oversized announcement costs nothing; a zero
length is malformed because every frame carries one JSON value. Decoding is strict: invalid
UTF-8, non-finite numbers (``NaN``, ``Infinity``, literals that overflow to infinity), unpaired
surrogate escapes, repeated keys in one object and nesting deep enough to exhaust the parser are
all :class:`~memories.errors.ProtocolError`, and nothing else ever escapes the decoder.

Wire v1 wraps every request and response::

    request   {"v": 1, "id": <int|str>, "request": {"op": "...", ...}}
    success   {"v": 1, "id": <id>, "ok": true, "response": {...}}
    failure   {"v": 1, "id": <id|null>, "ok": false, "error": {"code": "...", "message": "..."}}

Unknown top-level fields are rejected. The id is echoed back; it is ``null`` only when the
request could not be read far enough to learn it. Error messages are fixed texts: they never echo
a request body, a field value or any other raw input.

A connection made for a grant (an MCP client) authenticates with its first request, which the
server answers itself (it is not a service request)::

    {"v": 1, "id": <id>, "request": {"op": "grant_authenticate", "token": "mem_grant_..."}}
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memories.errors import MemoriesError, ProtocolError, UsageError, error_for_code

__all__ = [
    "AUTH_OP",
    "HEADER_SIZE",
    "MAX_FRAME",
    "MAX_ID_LENGTH",
    "MAX_TOKEN_CHARS",
    "WIRE_VERSION",
    "FrameDecoder",
    "WireRequest",
    "decode_body",
    "encode_frame",
    "envelope_id",
    "error_envelope",
    "frame_length",
    "ok_envelope",
    "parse_request",
    "parse_response",
    "unix_socket_address",
]

#: Largest frame body in bytes, in both directions.
MAX_FRAME: Final = 16 * 1024 * 1024
HEADER_SIZE: Final = 4
WIRE_VERSION: Final = 1
#: The op of the authentication request that opens a grant-authenticated connection.
AUTH_OP: Final = "grant_authenticate"
#: Longest token an authentication request may carry (ours are 53 characters).
MAX_TOKEN_CHARS: Final = 512
#: Longest string request id; integer ids must fit in an IEEE double exactly.
MAX_ID_LENGTH: Final = 128
_MAX_INT_ID: Final = 2**53 - 1
# sun_path is 108 bytes on Linux and 104 on the BSDs; one byte goes to the terminating NUL.
_MAX_SOCKET_PATH: Final = 103

_HEADER = struct.Struct(">I")
_REQUEST_FIELDS: Final = frozenset({"v", "id", "request"})
_RESPONSE_FIELDS: Final = frozenset({"v", "id", "ok", "response", "error"})
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")

_MIB = MAX_FRAME // (1024 * 1024)
_TOO_LARGE = f"the frame is larger than the {_MIB} MiB limit; send less data at once"
_EMPTY = "the frame is empty; every frame carries one JSON value"
_NOT_UTF8 = "the frame is not valid UTF-8; encode JSON as UTF-8"
_NOT_JSON = "the frame is not valid JSON; send one JSON value per frame"
_NOT_FINITE = "the frame contains a non-finite number; send finite numbers only"
_TOO_DEEP = "the frame is nested too deeply; flatten the value"
_SURROGATE_TEXT = "the frame contains an unpaired surrogate escape; send valid Unicode text"
_DUPLICATE_KEY = "the frame repeats a key inside one object; send each key once"
_SHORT_HEADER = "the frame header is incomplete; every frame starts with a 4-byte length"
_BROKEN = "the frame stream is broken by an earlier error; open a new connection"
_NOT_ENCODABLE = (
    "the value cannot be encoded as JSON; use objects, arrays, strings, "
    "finite numbers, booleans and null only"
)


class _Rejected(ValueError):
    """Raised inside the JSON parser hooks; turned into a ProtocolError with this message."""


def _reject_constant(_name: str) -> Any:
    raise _Rejected(_NOT_FINITE)


def _finite_float(text: str) -> float:
    value = float(text)
    # ``1e400`` is valid JSON syntax but parses to infinity, which has no JSON spelling.
    if value in (float("inf"), float("-inf")):
        raise _Rejected(_NOT_FINITE)
    return value


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    # Repeated keys let two parsers disagree about what a request says; refuse them.
    if len(result) != len(pairs):
        raise _Rejected(_DUPLICATE_KEY)
    return result


_DECODER = json.JSONDecoder(
    parse_float=_finite_float,
    parse_constant=_reject_constant,
    object_pairs_hook=_unique_object,
)


def _has_surrogate(value: object) -> bool:
    # Iterative on purpose: the value may be nested nearly as deep as the parser allows.
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def encode_frame(value: object) -> bytes:
    """Encode one JSON value as a frame: compact JSON, UTF-8, 4-byte big-endian length prefix.

    Raises:
        ProtocolError: the value is not JSON-encodable (unsupported type, non-finite float,
            unpaired surrogate, circular or too deeply nested) or its encoding is larger than
            :data:`MAX_FRAME`.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        body = text.encode("utf-8")
    except RecursionError as exc:
        raise ProtocolError(_TOO_DEEP) from exc
    except (TypeError, ValueError) as exc:
        # ValueError covers NaN, circular references and (as UnicodeEncodeError) lone surrogates.
        raise ProtocolError(_NOT_ENCODABLE) from exc
    if len(body) > MAX_FRAME:
        raise ProtocolError(_TOO_LARGE)
    return _HEADER.pack(len(body)) + body


def frame_length(header: bytes) -> int:
    """Return the body length a 4-byte frame header announces.

    Raises:
        ProtocolError: the header is not 4 bytes, announces an empty body, or announces more
            than :data:`MAX_FRAME` bytes.
    """
    if len(header) != HEADER_SIZE:
        raise ProtocolError(_SHORT_HEADER)
    (length,) = _HEADER.unpack(header)
    if length == 0:
        raise ProtocolError(_EMPTY)
    if length > MAX_FRAME:
        raise ProtocolError(_TOO_LARGE)
    return int(length)


def decode_body(body: bytes) -> object:
    """Decode one frame body (without its header) into a JSON value.

    Raises:
        ProtocolError: the body is empty or too large, not UTF-8, not exactly one JSON value,
            holds a non-finite number, an unpaired surrogate escape or a repeated key, or is
            nested too deeply to parse.
    """
    if not body:
        raise ProtocolError(_EMPTY)
    if len(body) > MAX_FRAME:
        raise ProtocolError(_TOO_LARGE)
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(_NOT_UTF8) from exc
    try:
        value: object = _DECODER.decode(text)
    except _Rejected as exc:
        raise ProtocolError(str(exc)) from exc
    except RecursionError as exc:
        raise ProtocolError(_TOO_DEEP) from exc
    except ValueError as exc:
        # JSONDecodeError, and the interpreter's limit on very long integer literals.
        raise ProtocolError(_NOT_JSON) from exc
    # Strict UTF-8 cannot carry surrogates, so only a \\uD800-style escape can produce one.
    if _SURROGATE_ESCAPE.search(text) and _has_surrogate(value):
        raise ProtocolError(_SURROGATE_TEXT)
    return value


class FrameDecoder:
    """Incremental frame decoder for one byte stream.

    Feed it whatever arrives; it returns every complete value so far and keeps the rest. After
    it has raised once the stream has lost its framing, so every later call raises again.
    """

    __slots__ = ("_buffer", "_failed", "_length")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._length: int | None = None
        self._failed = False

    @property
    def pending(self) -> int:
        """Bytes held that do not yet make a complete frame (0 between frames)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[object]:
        """Add bytes from the stream and return the values of all frames now complete.

        Raises:
            ProtocolError: a frame is malformed (see :func:`frame_length` and
                :func:`decode_body`), or an earlier call already raised.
        """
        if self._failed:
            raise ProtocolError(_BROKEN)
        try:
            return self._feed(data)
        except ProtocolError:
            self._failed = True
            self._buffer.clear()
            raise
        except (MemoryError, RecursionError) as exc:
            self._failed = True
            self._buffer.clear()
            raise ProtocolError(_TOO_LARGE) from exc

    def _feed(self, data: bytes) -> list[object]:
        self._buffer += data
        values: list[object] = []
        while True:
            if self._length is None:
                if len(self._buffer) < HEADER_SIZE:
                    return values
                # Checked before any body byte is kept waiting for, so a huge announcement is
                # refused at once instead of being buffered.
                self._length = frame_length(bytes(self._buffer[:HEADER_SIZE]))
                del self._buffer[:HEADER_SIZE]
            if len(self._buffer) < self._length:
                return values
            body = bytes(self._buffer[: self._length])
            del self._buffer[: self._length]
            self._length = None
            values.append(decode_body(body))


@dataclass(frozen=True)
class WireRequest:
    """A well-formed Wire v1 request: its id and the request object (which has a string op)."""

    id: int | str
    request: dict[str, Any]


def _valid_id(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -_MAX_INT_ID <= value <= _MAX_INT_ID
    if isinstance(value, str):
        return len(value) <= MAX_ID_LENGTH
    return False


def envelope_id(value: object) -> int | str | None:
    """The request id of a decoded envelope if it has a valid one, else ``None``.

    Used to address an error envelope to a request that failed validation. Never raises.
    """
    if isinstance(value, dict):
        candidate = value.get("id")
        if _valid_id(candidate):
            assert isinstance(candidate, int | str)
            return candidate
    return None


def parse_request(value: object) -> WireRequest:
    """Validate a decoded Wire v1 request envelope.

    Raises:
        ProtocolError: the value is not an object; it has a top-level field other than ``v``,
            ``id`` and ``request``; ``v`` is not 1; the id is missing, not an integer or
            string, out of range or longer than :data:`MAX_ID_LENGTH`; or ``request`` is not an
            object with a non-empty string ``op``.
    """
    if not isinstance(value, dict):
        raise ProtocolError("the request is not a JSON object; send {v, id, request}")
    if not _REQUEST_FIELDS.issuperset(value):
        raise ProtocolError("the request has an unknown top-level field; send only v, id, request")
    version = value.get("v")
    if type(version) is not int or version != WIRE_VERSION:
        raise ProtocolError(f"the request has no supported version; set v to {WIRE_VERSION}")
    request_id = value.get("id")
    if not _valid_id(request_id):
        raise ProtocolError(
            "the request id is missing or invalid; use an integer or a string of at most "
            f"{MAX_ID_LENGTH} characters"
        )
    assert isinstance(request_id, int | str)
    request = value.get("request")
    if not isinstance(request, dict):
        raise ProtocolError("the request field is missing or not an object")
    op = request.get("op")
    if not isinstance(op, str) or not op:
        raise ProtocolError("the request has no op; name the operation in request.op")
    return WireRequest(id=request_id, request=request)


def ok_envelope(request_id: int | str, response: dict[str, Any]) -> dict[str, Any]:
    """The success envelope answering ``request_id``."""
    return {"v": WIRE_VERSION, "id": request_id, "ok": True, "response": response}


def error_envelope(request_id: int | str | None, error: MemoriesError) -> dict[str, Any]:
    """The failure envelope for ``error``; ``request_id`` is ``None`` when it is unknown."""
    return {
        "v": WIRE_VERSION,
        "id": request_id,
        "ok": False,
        "error": {"code": error.code, "message": error.message},
    }


_BAD_RESPONSE = (
    "the daemon sent a malformed response; run matching versions of the client and the daemon"
)


def parse_response(value: object, *, expected_id: int | str | None = None) -> dict[str, Any]:
    """Return the response object of a success envelope, or raise the error it reports.

    With ``expected_id``, a success must carry exactly that id and a failure that id or
    ``null`` (the daemon could not read the request far enough to learn it).

    Raises:
        MemoriesError: the subclass for the envelope's error code (via
            :func:`memories.errors.error_for_code`), with the daemon's message.
        ProtocolError: the value is not a well-formed Wire v1 response, or answers another id.
    """
    if not isinstance(value, dict) or not _RESPONSE_FIELDS.issuperset(value):
        raise ProtocolError(_BAD_RESPONSE)
    version = value.get("v")
    if type(version) is not int or version != WIRE_VERSION:
        raise ProtocolError(_BAD_RESPONSE)
    ok = value.get("ok")
    response_id = value.get("id")
    if ok is True:
        response = value.get("response")
        if "error" in value or not isinstance(response, dict):
            raise ProtocolError(_BAD_RESPONSE)
        if expected_id is not None and not _same_id(response_id, expected_id):
            raise ProtocolError(_BAD_RESPONSE)
        return response
    if ok is not False or "response" in value:
        raise ProtocolError(_BAD_RESPONSE)
    error = value.get("error")
    if not isinstance(error, dict):
        raise ProtocolError(_BAD_RESPONSE)
    code = error.get("code")
    message = error.get("message")
    if not isinstance(code, str) or not isinstance(message, str):
        raise ProtocolError(_BAD_RESPONSE)
    answered_other = response_id is not None and not _same_id(response_id, expected_id)
    if expected_id is not None and answered_other:
        raise ProtocolError(_BAD_RESPONSE)
    raise error_for_code(code, message)


def _same_id(received: object, expected: int | str | None) -> bool:
    # True == 1 in Python; an id is only the same if its JSON type is the same too.
    return type(received) is type(expected) and received == expected


def unix_socket_address(path: Path) -> str:
    """The address string for a Unix socket at ``path``.

    Raises:
        UsageError: the path is too long for a Unix socket address on this system.
    """
    address = str(path)
    if len(address.encode("utf-8", errors="surrogateescape")) > _MAX_SOCKET_PATH:
        raise UsageError(
            f"the socket path is longer than {_MAX_SOCKET_PATH} bytes, too long for a Unix "
            "socket; choose a shorter runtime folder"
        )
    return address
