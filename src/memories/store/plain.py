"""Canonical bytes of the store's own small documents (checkpoints, the root), fast.

Every commit and every intent batch seals a checkpoint body and a new root, each as RFC 8785
canonical JSON. Those documents are nested objects of printable-ASCII text, safe integers and
booleans, and for such values RFC 8785 is plain: keys in code-unit order (for ASCII, Python's
order), text quoted as it is, integers in decimal, no whitespace. :func:`canonical` writes
exactly that, and hands anything else (escapes, non-ASCII text, floats, large integers) to the
general encoder, so its bytes are always those of
:func:`~memories.crypto.canonical_bytes`.
"""

from __future__ import annotations

import re

from memories.crypto import canonical_bytes

__all__ = ["canonical"]

# Printable ASCII without '"' and '\\': JSON and RFC 8785 write such text as it is.
_PLAIN_TEXT = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")
_SAFE_INT = 2**53 - 1  # RFC 8785 §3.2.2.3: larger integers do not survive a double
_DEPTH = 16


class _NotPlain(Exception):
    """The value needs the general encoder."""


def canonical(value: object) -> bytes:
    """RFC 8785 canonical JSON of ``value``, byte for byte ``canonical_bytes(value)``.

    Raises:
        UsageError: as ``canonical_bytes``, for a value with no canonical form.
    """
    parts: list[str] = []
    try:
        _write(value, parts, 0)
    except _NotPlain:
        return canonical_bytes(value)
    return "".join(parts).encode("ascii")


def _write(value: object, out: list[str], depth: int) -> None:
    if depth > _DEPTH:
        raise _NotPlain
    if type(value) is str:  # a subclass (an enum) takes the general path
        if not _PLAIN_TEXT.fullmatch(value):
            raise _NotPlain
        out.append(f'"{value}"')
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif type(value) is int:
        if not -_SAFE_INT <= value <= _SAFE_INT:
            raise _NotPlain
        out.append(str(value))
    elif isinstance(value, dict):
        if not all(type(key) is str and _PLAIN_TEXT.fullmatch(key) for key in value):
            raise _NotPlain
        out.append("{")
        first = True
        for key in sorted(value):
            out.append(f'"{key}":' if first else f',"{key}":')
            first = False
            _write(value[key], out, depth + 1)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, depth + 1)
        out.append("]")
    else:
        raise _NotPlain
