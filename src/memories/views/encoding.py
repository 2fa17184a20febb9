"""How bytes travel inside requests and responses: unpadded base64url (RFC 4648 §5).

Front ends encode file payloads with these and the service decodes them; the spelling is the
same one the signed formats use, and decoding accepts exactly one spelling per byte string.
"""

from __future__ import annotations

import base64
import binascii
import re

from memories.errors import IntegrityError, UsageError

__all__ = ["b64u_decode", "b64u_encode"]

_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")
_ERROR = "the data is not unpadded base64url"


def b64u_encode(data: bytes | bytearray) -> str:
    """Encode ``data`` as unpadded base64url.

    Raises:
        UsageError: ``data`` is not bytes.
    """
    if not isinstance(data, bytes | bytearray):
        raise UsageError("only bytes can be base64url-encoded")
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text: str) -> bytes:
    """Decode strict unpadded base64url: no padding, whitespace, foreign characters, impossible
    lengths or non-zero trailing bits.

    Raises:
        IntegrityError: ``text`` is not canonical unpadded base64url (the message never quotes it).
    """
    if not isinstance(text, str) or not text.isascii() or not _ALPHABET.fullmatch(text):
        raise IntegrityError(_ERROR)
    if len(text) % 4 == 1:
        raise IntegrityError(_ERROR)
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise IntegrityError(_ERROR) from exc
    # A final quantum of 2 or 3 characters carries spare bits; only the all-zero form is canonical.
    if b64u_encode(data) != text:
        raise IntegrityError(_ERROR)
    return data
