"""Pure formatting helpers every front end and the service share: sizes and short ids."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["format_limit", "format_size", "short_ids"]

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
        shared = 0
        for other in (position - 1, position + 1):
            if 0 <= other < len(bare):
                shared = max(shared, _common_prefix(current, bare[other]))
        out[current] = current[: max(minimum, shared + 1)]
    return {i: out[i.removeprefix("sha256:")] for i in given}
