"""The transport seam: put, get and list immutable objects by name. Never delete.

A transport moves opaque bytes; it is never trusted. Everything it returns is checked by the
caller (an object's name is the SHA-256 of its bytes, descriptors are signed), so a transport
that reorders, duplicates, withholds, serves stale listings or truncates is a nuisance, not a
danger. What a transport must do:

- ``put(name, data)`` stores ``data`` under ``name`` so that a later ``get`` returns either
  all of it or nothing (``ObjectMissing``); putting the same name twice is harmless.
- ``get(name)`` returns the bytes stored under ``name`` or raises ``ObjectMissing``.
- ``list()`` returns the names it holds now, in any order, possibly stale or incomplete.

Names are ``<area>/<64 hex digits>`` (:func:`check_name`), so no name can climb out of a folder,
start an option of a child process, or carry anything but an id.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Final, Protocol, runtime_checkable

from memories.errors import UsageError

__all__ = [
    "AREAS",
    "MAX_OBJECT_BYTES",
    "Transport",
    "check_name",
    "content_matches",
    "is_name",
]

#: The folders objects live in: sealed payloads and the signed descriptors that announce them.
AREAS: Final = ("objects", "descriptors")
#: Nothing larger is accepted from a transport (a revision's chunks travel as their own objects).
MAX_OBJECT_BYTES: Final = 64 * 1024 * 1024
_NAME = re.compile(r"(objects|descriptors)/[0-9a-f]{64}")


def is_name(name: str) -> bool:
    """Whether ``name`` is a well-formed object name."""
    return _NAME.fullmatch(name) is not None


def check_name(name: str) -> str:
    """Return ``name`` if it is a well-formed object name. Raises ``UsageError`` otherwise."""
    if not isinstance(name, str) or not is_name(name):
        raise UsageError("an object name must be objects/<sha256 hex> or descriptors/<sha256 hex>")
    return name


def content_matches(name: str, data: bytes) -> bool:
    """Whether ``data`` hashes to the id in ``name`` (a complete, untampered object)."""
    digest = hashlib.sha256(data).hexdigest()
    return hmac.compare_digest(digest, name.rsplit("/", 1)[-1])


@runtime_checkable
class Transport(Protocol):
    """Storage for immutable objects. Implementations raise ``TransportError`` (retry later),
    ``ObjectMissing`` from ``get``, ``UsageError`` for a malformed name."""

    @property
    def description(self) -> str:
        """Where the objects go, for status lines: a path or ``rclone REMOTE:PATH``.

        Never a credential."""
        ...

    def put(self, name: str, data: bytes) -> None: ...

    def get(self, name: str) -> bytes: ...

    def list(self) -> list[str]: ...
