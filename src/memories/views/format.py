"""Pure formatting helpers every front end and the service share: sizes and short ids."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["format_limit", "format_size", "short_ids", "shortest_prefix"]

_KIB = 1024
_MIB = 1024 * 1024


def format_size(size: int) -> str:
    """Render a byte count for messages: ``"512 bytes"``, ``"3.5 KiB"``, ``"70.0 MiB"``.

    Fractions are rounded up to the next tenth.
    """
    if size < _KIB:
        return f"{size} bytes"
    unit, scale = ("KiB", _KIB) if size < _MIB else ("MiB", _MIB)
    # Rounded up, so a size just over a limit never reads as equal to it.
    tenths = -(-size * 10 // scale)
    return f"{tenths // 10}.{tenths % 10} {unit}"


def format_limit(limit: int) -> str:
    """Render a configured limit: whole MiB or KiB when it is one (``"64 MiB"``), else as
    :func:`format_size`."""
    if limit >= _MIB and limit % _MIB == 0:
        return f"{limit // _MIB} MiB"
    if limit >= _KIB and limit % _KIB == 0:
        return f"{limit // _KIB} KiB"
    return format_size(limit)


def _common_prefix(a: str, b: str) -> int:
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length


def shortest_prefix(value: str, neighbours: Iterable[str], minimum: int = 8) -> str:
    """The shortest prefix of ``value``, at least ``minimum`` characters, that none of
    ``neighbours`` (its nearest ids in sorted order) starts with."""
    shared = max((_common_prefix(value, other) for other in neighbours), default=0)
    return value[: max(minimum, shared + 1)]


def short_ids(ids: Iterable[str], minimum: int = 8) -> dict[str, str]:
    """The shortest unambiguous prefix (at least ``minimum`` characters, ``sha256:`` dropped) of
    each id; the vault accepts these prefixes as references.

    Sorting puts every id next to the ids it shares the longest prefixes with, so this is
    O(n log n) rather than comparing every pair.
    """
    given = list(ids)
    bare = sorted({i.removeprefix("sha256:") for i in given})
    out: dict[str, str] = {}
    for position, current in enumerate(bare):
        near = bare[max(0, position - 1) : position] + bare[position + 1 : position + 2]
        out[current] = shortest_prefix(current, near, minimum)
    return {i: out[i.removeprefix("sha256:")] for i in given}
