"""Canonical bytes of the store's own small documents (checkpoints, the root), fast.

Every commit and every intent batch seals a checkpoint body and a new root, each as RFC 8785
canonical JSON. Those documents are nested objects of printable-ASCII text, safe integers and
booleans, and for such values RFC 8785 is plain: keys in code-unit order (for ASCII, Python's
order), text quoted as it is, integers in decimal, no whitespace. That is exactly what the
standard library's C encoder writes with sorted keys, compact separators and ASCII output, as
long as no text needs an escape. :func:`canonical` checks the types in one walk, lets the C
encoder write, and takes the general encoder whenever the output holds a backslash (with ASCII
output every escape, every non-ASCII character and every quote inside text shows as one) or a
value is of another type (floats, large integers, subclasses such as enums, keys that are not
text). Its bytes are therefore always those of :func:`~memories.crypto.canonical_bytes`.
"""

from __future__ import annotations

import json

from memories.crypto import canonical_bytes

__all__ = ["canonical"]

_SAFE_INT = 2**53 - 1  # RFC 8785 §3.2.2.3: larger integers do not survive a double
_DEPTH = 16
# ensure_ascii (the default) turns anything that is not printable ASCII into an escape.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical(value: object) -> bytes:
    """RFC 8785 canonical JSON of ``value``, byte for byte ``canonical_bytes(value)``.

    Raises:
        UsageError: as ``canonical_bytes``, for a value with no canonical form.
    """
    if _plain(value, 0):
        text = _ENCODER.encode(value)
        if "\\" not in text:
            return text.encode("ascii")
    return canonical_bytes(value)


def _plain(value: object, depth: int) -> bool:
    """Whether ``value`` holds only types the C encoder writes as RFC 8785 does (text is
    checked afterwards, on the output)."""
    kind = type(value)
    if kind is str or value is None or value is True or value is False:
        return True
    if kind is int:
        return -_SAFE_INT <= value <= _SAFE_INT  # type: ignore[operator]
    if depth >= _DEPTH:
        return False
    if isinstance(value, dict):
        for key, item in value.items():
            if type(key) is not str:
                return False
            if type(item) is not str and not _plain(item, depth + 1):
                return False
        return True
    if isinstance(value, list | tuple):
        return all(type(item) is str or _plain(item, depth + 1) for item in value)
    return False
