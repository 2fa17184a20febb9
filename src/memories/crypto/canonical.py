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
import json
import math
import re

import rfc8785

from memories.errors import IntegrityError, UsageError

__all__ = ["b64u_decode", "b64u_encode", "canonical_bytes"]

_B64U_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")
_B64U_ERROR = "the data is not valid unpadded base64url; it may be corrupt"
_B64U_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# The last characters a final quantum of 2 or 3 characters may end with: those whose spare
# low bits (4 or 2 of them) are zero.
_SPARE_FREE = {2: frozenset(_B64U_DIGITS[::16]), 3: frozenset(_B64U_DIGITS[::4])}
# Integers outside this range cannot round-trip through an IEEE 754 double (RFC 8785 §3.2.2.3).
_SAFE_INT = 2**53 - 1
# Deeper values take the general encoder, which says why when they cannot be encoded.
_PLAIN_DEPTH = 64
# Python's own encoder (in C) writes RFC 8785 bytes for the values ``_plain`` accepts.
_PLAIN_ENCODE = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
).encode


def canonical_bytes(value: object) -> bytes:
    """Return the RFC 8785 canonical JSON encoding of ``value``.

    Accepted values: ``None``, ``bool``, ``int`` within ±(2**53 - 1), finite ``float``, ``str``
    (valid Unicode, no lone surrogates), ``list``/``tuple`` and ``dict`` with ``str`` keys.

    Raises:
        UsageError: the value holds something that has no canonical JSON form (a non-finite
            float, an out-of-range integer, a non-string key, bytes, a set, a lone surrogate,
            nesting too deep). The message names the kind of problem, never the value.
    """
    if _plain(value, 0):
        try:
            return _PLAIN_ENCODE(value).encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: the general encoder refuses it and says so
    try:
        return rfc8785.dumps(value)  # type: ignore[arg-type]
    except (rfc8785.CanonicalizationError, RecursionError, TypeError, ValueError) as exc:
        raise UsageError(_explain(value)) from exc


def _plain(value: object, depth: int) -> bool:
    """Whether ``value`` is made only of the types whose RFC 8785 form Python's ``json`` writes
    byte for byte: ``None``, exact ``bool``/``str``, exact ``int`` within the safe range, and
    exact ``list``/``tuple``/``dict`` of those, with ASCII keys.

    Signing, hashing and state records encode such values all the time, and the pure-Python
    ``rfc8785`` walk costs about ten times the C encoder. For this domain the outputs agree:
    ASCII keys sort by code point exactly as by UTF-16 code unit; strings are written as UTF-8
    with only ``"``, ``\\`` and the C0 controls escaped (the short forms, else ``\\u00xx`` in
    lower case); integers in decimal. Floats (ECMAScript formatting), subclasses, other key
    alphabets and deep nesting return False and take the general encoder.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_SAFE_INT <= value <= _SAFE_INT  # type: ignore[operator]
    if depth >= _PLAIN_DEPTH:
        return False
    # Strings are most leaves: they are passed over here rather than in a call each.
    if kind is dict:
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str or not key.isascii():
                return False
            if type(item) is not str and not _plain(item, depth + 1):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:  # type: ignore[attr-defined]
            if type(item) is str:
                continue
            if not _plain(item, depth + 1):
                return False
        return True
    return False


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
    # A final quantum of 2 or 3 characters carries 4 or 2 spare bits in its last character;
    # only the all-zero form is canonical (checked here rather than by encoding again).
    spare = _SPARE_FREE.get(len(text) % 4)
    if spare is not None and text[-1] not in spare:
        raise IntegrityError(_B64U_ERROR)
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.urlsafe_b64decode(padded)
    except (binascii.Error, ValueError) as exc:
        raise IntegrityError(_B64U_ERROR) from exc
