"""Identifiers, content addresses, fingerprints and the short-id projection.

- Random ids (asset, vault, store) are 128 random bits as 32 lowercase hex characters.
- Content addresses and fingerprints are algorithm-tagged: ``sha256:<64 lowercase hex>``.
- :func:`tagged_hash` prefixes a domain tag so a hash computed for one purpose (a revision, a
  chunk list) can never be presented as the hash of another kind of object.
- Short ids are display prefixes of the hex part. They are a convenience for people; anything
  that approves or authorizes must compare full values (see the jobs and identities sections of
  the specification).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable

from memories.errors import NotFoundError, UsageError

__all__ = [
    "HASH_PREFIX",
    "RESOLVE_MINIMUM",
    "SHORT_ID_MINIMUM",
    "digest",
    "fingerprint",
    "keyed_digest",
    "new_id",
    "resolve_short",
    "short_id",
    "tagged_hash",
]

HASH_PREFIX = "sha256:"
SHORT_ID_MINIMUM = 8
RESOLVE_MINIMUM = 4

_HEX = re.compile(r"[0-9a-f]+")


def new_id() -> str:
    """Return a fresh random id: 128 bits from the OS CSPRNG as 32 lowercase hex characters."""
    return secrets.token_hex(16)


def tagged_hash(tag: str, data: bytes | bytearray) -> str:
    """Return ``"sha256:" + hex(SHA-256(tag_utf8 || 0x00 || data))``.

    The NUL separator is unambiguous because tags may not contain NUL.

    Raises:
        UsageError: ``tag`` is empty, holds NUL or is not valid Unicode; ``data`` is not bytes.
    """
    if not isinstance(tag, str) or not tag or "\x00" in tag:
        raise UsageError("a hash domain tag must be a non-empty string without NUL characters")
    try:
        tag_bytes = tag.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError("a hash domain tag must be valid Unicode") from exc
    _require_bytes(data, "hashed data")
    return HASH_PREFIX + hashlib.sha256(tag_bytes + b"\x00" + bytes(data)).hexdigest()


def digest(data: bytes | bytearray) -> str:
    """Return ``"sha256:<hex>"`` of plain SHA-256 over ``data``.

    Raises:
        UsageError: ``data`` is not bytes.
    """
    _require_bytes(data, "hashed data")
    return HASH_PREFIX + hashlib.sha256(data).hexdigest()


def fingerprint(public_key: bytes | bytearray) -> str:
    """Return the full fingerprint ``"sha256:<64 hex>"`` of a raw public key.

    Shortened forms are for display only and must never be the sole approval check.

    Raises:
        UsageError: ``public_key`` is not non-empty bytes.
    """
    _require_bytes(public_key, "a public key")
    if not public_key:
        raise UsageError("a public key cannot be empty")
    return HASH_PREFIX + hashlib.sha256(public_key).hexdigest()


def keyed_digest(key: bytes | bytearray, data: bytes | bytearray) -> bytes:
    """Return HMAC-SHA256(key, data), 32 bytes; used for opaque row ids that hide what they name.

    Raises:
        UsageError: ``key`` is shorter than 16 bytes or either argument is not bytes.
    """
    _require_bytes(key, "an HMAC key")
    _require_bytes(data, "HMAC data")
    if len(key) < 16:
        raise UsageError("an HMAC key must be at least 16 bytes")
    return hmac.new(key, data, hashlib.sha256).digest()


def short_id(full: str, others: Iterable[str], minimum: int = SHORT_ID_MINIMUM) -> str:
    """Return the shortest prefix of ``full``'s hex part that names it unambiguously.

    The prefix is at least ``minimum`` characters and is not a prefix of any other id's hex part
    in ``others`` (ids equal to ``full`` are ignored). An algorithm prefix such as ``sha256:`` is
    stripped from every id first. When no prefix is unique (``full`` is itself a prefix of another
    id), the whole hex part is returned.

    Raises:
        UsageError: ``full`` is not a lowercase hex id or ``minimum`` is below 1.
    """
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
        raise UsageError("the short-id minimum length must be a positive integer")
    mine = _hex_part(full)
    if mine is None:
        raise UsageError("a short id can only be made from a lowercase hexadecimal id")
    needed = minimum
    for other in others:
        theirs = _hex_part(other) if isinstance(other, str) else None
        if theirs is None or theirs == mine:
            continue
        needed = max(needed, _common_prefix_length(mine, theirs) + 1)
    return mine[:needed]


def resolve_short(prefix: str, candidates: Iterable[str]) -> str:
    """Return the one candidate whose hex part starts with ``prefix``.

    ``prefix`` is at least 4 hexadecimal characters (upper case is folded to lower case) and may
    carry a ``sha256:`` prefix. A candidate whose hex part equals the prefix exactly wins over
    longer candidates that merely start with it. Candidates with the same hex part count once
    (the first one seen is returned).

    Raises:
        UsageError: the prefix is not valid hex or is too short (the message does not quote it),
            or it matches more than one id (the message says how many).
        NotFoundError: no candidate starts with the prefix.
    """
    wanted = _hex_part(prefix.lower()) if isinstance(prefix, str) else None
    if wanted is None or len(wanted) < RESOLVE_MINIMUM:
        raise UsageError(
            f"an id prefix must be at least {RESOLVE_MINIMUM} hexadecimal characters (0-9, a-f)"
        )
    matches: dict[str, str] = {}
    for candidate in candidates:
        theirs = _hex_part(candidate) if isinstance(candidate, str) else None
        if theirs is None:
            continue
        if theirs == wanted:
            return candidate
        if theirs.startswith(wanted):
            matches.setdefault(theirs, candidate)
    if not matches:
        raise NotFoundError(f"no id starts with {wanted}; list the ids to find the right one")
    if len(matches) > 1:
        raise UsageError(f"the id prefix {wanted} matches {len(matches)} ids; give more characters")
    return next(iter(matches.values()))


def _hex_part(value: str) -> str | None:
    text = value.removeprefix(HASH_PREFIX)
    return text if _HEX.fullmatch(text) else None


def _common_prefix_length(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _require_bytes(value: object, what: str) -> None:
    if not isinstance(value, bytes | bytearray):
        raise UsageError(f"{what} must be bytes")
