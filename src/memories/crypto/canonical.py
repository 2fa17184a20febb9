"""Canonical bytes for anything signed or hashed, and the one byte encoding used inside them.

Canonical bytes are RFC 8785 (JSON Canonicalization Scheme) output: object keys sorted by their
UTF-16 code units, no insignificant whitespace, ECMAScript number formatting. JSON has no byte
strings, so callers encode bytes themselves as unpadded base64url (RFC 4648 §5) with
:func:`b64u_encode`; :func:`b64u_decode` accepts exactly one spelling per byte string so that a
signed value cannot be re-encoded into a different but "equal" document.
"""

from __future__ import annotations

import base64
import binascii
import math
import re

import rfc8785

from memories.errors import IntegrityError, UsageError

__all__ = ["b64u_decode", "b64u_encode", "canonical_bytes"]

_B64U_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")
_B64U_ERROR = "the data is not valid unpadded base64url; it may be corrupt"
# Integers outside this range cannot round-trip through an IEEE 754 double (RFC 8785 §3.2.2.3).
_SAFE_INT = 2**53 - 1


def canonical_bytes(value: object) -> bytes:
    """Return the RFC 8785 canonical JSON encoding of ``value``.

    Accepted values: ``None``, ``bool``, ``int`` within ±(2**53 - 1), finite ``float``, ``str``
    (valid Unicode, no lone surrogates), ``list``/``tuple`` and ``dict`` with ``str`` keys.

    Raises:
        UsageError: the value holds something that has no canonical JSON form (a non-finite
            float, an out-of-range integer, a non-string key, bytes, a set, a lone surrogate,
            nesting too deep). The message names the kind of problem, never the value.
    """
    try:
        return rfc8785.dumps(value)  # type: ignore[arg-type]
    except (rfc8785.CanonicalizationError, RecursionError, TypeError, ValueError) as exc:
        raise UsageError(_explain(value)) from exc


def _explain(value: object) -> str:
    """Say why ``value`` has no canonical form, without quoting any part of it."""
    try:
        problem = _find_problem(value, depth=0)
    except RecursionError:
        problem = "it is nested too deeply"
    reason = problem or "it holds a value JSON cannot represent"
    return f"the value cannot be encoded as canonical JSON: {reason}"


def _find_problem(value: object, depth: int) -> str | None:
    if depth > 500:
        return "it is nested too deeply"
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        if -_SAFE_INT <= value <= _SAFE_INT:
            return None
        return "an integer is outside ±(2**53 - 1); encode large numbers as strings"
    if isinstance(value, float):
        return None if math.isfinite(value) else "a number is NaN or infinite"
    if isinstance(value, str):
        return _string_problem(value)
    if isinstance(value, list | tuple):
        for item in value:
            found = _find_problem(item, depth + 1)
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"an object key has type {type(key).__name__}; keys must be strings"
            found = _string_problem(key) or _find_problem(item, depth + 1)
            if found:
                return found
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return "it holds raw bytes; encode them with b64u_encode first"
    return f"it holds a {type(value).__name__}, which JSON cannot represent"


def _string_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a string holds an unpaired surrogate and is not valid Unicode"
    return None


def b64u_encode(data: bytes | bytearray) -> str:
    """Encode ``data`` as unpadded base64url (RFC 4648 §5, no ``=``).

    Raises:
        UsageError: ``data`` is not bytes.
    """
    if not isinstance(data, bytes | bytearray):
        raise UsageError("only bytes can be base64url-encoded")
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text: str) -> bytes:
    """Decode strict unpadded base64url.

    Rejects padding, characters outside ``A-Z a-z 0-9 - _``, whitespace, impossible lengths and
    non-zero trailing bits, so every byte string has exactly one accepted spelling.

    Raises:
        IntegrityError: ``text`` is not canonical unpadded base64url (the message never quotes it).
    """
    if not isinstance(text, str) or not text.isascii() or not _B64U_ALPHABET.fullmatch(text):
        raise IntegrityError(_B64U_ERROR)
    if len(text) % 4 == 1:
        raise IntegrityError(_B64U_ERROR)
    padded = text + "=" * (-len(text) % 4)
    try:
        data = base64.urlsafe_b64decode(padded)
    except (binascii.Error, ValueError) as exc:
        raise IntegrityError(_B64U_ERROR) from exc
    # A final quantum of 2 or 3 characters carries spare bits; only the all-zero form is canonical.
    if b64u_encode(data) != text:
        raise IntegrityError(_B64U_ERROR)
    return data
